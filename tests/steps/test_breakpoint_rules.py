"""Cache breakpoints keep the providers' rules: at most four blocks with a marker in the
whole request, none on a block that refuses one, and no 1-hour marker after a 5-minute one
(Anthropic answers each with a 400)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

import ctxwin
from ctxwin.testing import FakeCounter, agent_body
from tests.conftest import corpus_params, load

AUTO: dict[str, Any] = {
    "context_window": 4000,
    "cache_breakpoints": "auto",
    "window": {"trigger": 0.6, "target": 0.3},
    "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
}
KEEP: dict[str, Any] = {**AUTO, "cache_breakpoints": "keep"}
UNCLEARED: dict[str, Any] = {  # the window clears nothing
    **AUTO,
    "context_window": 200_000,
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.3},
}


def history(rounds: int = 20) -> dict[str, Any]:
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 150))] for r in range(rounds)]
    body = agent_body(uses, format="anthropic")
    del body["model"]
    return body


def markers(body: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, block, its marker) for every block with ``cache_control``, in the order the
    provider reads them: tools, system, messages."""
    for key in ("tools", "system"):
        for block in body.get(key) or () if isinstance(body.get(key), list) else ():
            if "cache_control" in block:
                yield key, block, block["cache_control"]
    for i, msg in enumerate(body["messages"]):
        yield from nested(f"messages.{i}", msg["content"])
    if isinstance(body.get("cache_control"), dict):  # automatic caching: on the last block
        yield "automatic", body, body["cache_control"]


def nested(where: str, content: object) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The markers of the blocks of ``content`` and of the blocks inside them, at any depth
    (a result's search result's text, a document's ``content`` source)."""
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("cache_control"), dict):
            yield where, block, block["cache_control"]
        yield from nested(where, block.get("content"))
        source = block.get("source")
        if isinstance(source, dict):
            yield from nested(where, source.get("content"))


def assert_provider_takes(body: Any) -> None:
    found = list(markers(body))
    assert len(found) <= 4, [w for w, _, _ in found]
    seen_short = False
    for where, block, value in found:
        assert block.get("type") not in ("thinking", "redacted_thinking"), where
        if block.get("type") == "text":
            assert block["text"].strip(), f"{where}: marker on an empty text block"
        if value.get("ttl") == "1h":
            assert not seen_short, f"{where}: a 1h marker after a 5m one"
        else:
            seen_short = True


def test_auto_counts_every_marked_block_of_a_message_it_keeps() -> None:
    """The user's last message carries two markers: with one on the tools and one on the
    system prompt that is four, so ctxwin adds none (it added a fifth)."""
    body = history()
    last = body["messages"][-1]
    last["content"] = [
        {**last["content"][0], "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}},
    ]
    body["system"] = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    body["tools"] = [
        {"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}
    ]
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    assert [m for m, _ in result.report.breakpoints] == [len(body["messages"]) - 1]


def test_auto_puts_no_five_minute_marker_before_the_users_one_hour_one() -> None:
    body = history()
    body["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    assert result.report.breakpoints[-1][0] == len(body["messages"]) - 1


def test_auto_gives_its_breakpoints_the_hour_of_automatic_caching() -> None:
    """A top-level ``cache_control`` with ``ttl: "1h"`` (automatic caching) puts a 1-hour
    breakpoint on the request's last block: ctxwin's before it were 5-minute ones (a 400,
    a longer TTL must come first). They take the hour, at no cost: every token up to the
    last 1-hour breakpoint is written at the hour's price anyway."""
    hour = {"type": "ephemeral", "ttl": "1h"}
    body = history()
    body["cache_control"] = hour
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    placed = [v for w, _, v in markers(result.request) if w != "automatic"]
    assert len(placed) == len(result.report.breakpoints) >= 2
    assert all(v == hour for v in placed)


def test_auto_keeps_its_five_minute_breakpoints_under_five_minute_automatic_caching() -> None:
    body = history()
    body["cache_control"] = {"type": "ephemeral", "ttl": "5m"}
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    placed = [v for w, _, v in markers(result.request) if w != "automatic"]
    assert placed
    assert all(v == {"type": "ephemeral"} for v in placed)


def search_results(rounds: int, marked: set[int]) -> dict[str, Any]:
    """A history whose tool answers with search results, the text of some marked (a RAG
    tool's: ``tool_result.content[].content[].cache_control``), and a marked system."""
    body = history(0)
    for r in range(rounds):
        text: dict[str, Any] = {"type": "text", "text": " ".join(["w"] * 150)}
        if r in marked:
            text["cache_control"] = {"type": "ephemeral"}
        found = {"type": "search_result", "source": f"https://d/{r}", "title": "t"}
        body["messages"].append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"s{r}", "name": "search", "input": {}}],
            }
        )
        body["messages"].append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"s{r}",
                        "content": [{**found, "content": [text]}],
                    }
                ],
            }
        )
    body["system"] = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    return body


def test_auto_counts_or_removes_markers_two_levels_inside_a_result() -> None:
    """Three search results' texts marked, the system prompt too: four breakpoints, which
    auto neither counted nor removed, then added two of its own (six: a 400)."""
    body = search_results(8, {1, 2, 3})
    assert len(list(markers(body))) == 4
    result = ctxwin.Policy(UNCLEARED, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    assert len(list(markers(result.request))) == 1 + len(result.report.breakpoints)


def test_auto_sees_the_markers_of_a_document_s_content_source() -> None:
    """A user's document of ``content`` source with a marked text block is a breakpoint
    of that message, removed with the other stale ones (it stayed, a third marker)."""
    body = search_results(8, set())
    text = {"type": "text", "text": "notes", "cache_control": {"type": "ephemeral"}}
    document = {"type": "document", "source": {"type": "content", "content": [text]}}
    read = [document, {"type": "text", "text": "read it"}]
    body["messages"][1:1] = [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": read},
    ]
    assert [w for w, _, _ in markers(body)] == ["system", "messages.2"]
    result = ctxwin.Policy(UNCLEARED, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    assert [w for w, _, _ in markers(result.request)] == [
        "system",
        *(f"messages.{i}" for i, _ in result.report.breakpoints),
    ]


def test_auto_never_marks_an_empty_text_block() -> None:
    """A user message ending in an empty text (a screenshot pasted with no words): the
    marker goes on the block before it."""
    body = history()
    body["messages"][-1]["content"].append({"type": "text", "text": ""})
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    last = result.request["messages"][-1]["content"]  # type: ignore[index]
    assert "cache_control" in last[0]


def test_auto_leaves_unmarked_a_message_with_only_an_empty_text() -> None:
    body = history()
    body["messages"].append({"role": "assistant", "content": "ok"})
    body["messages"].append({"role": "user", "content": ""})
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    assert_provider_takes(result.request)
    assert result.request["messages"][-1]["content"] == ""  # type: ignore[index]
    assert result.report.breakpoints[-1][0] == len(body["messages"]) - 2


@pytest.mark.parametrize("policy", [AUTO, KEEP], ids=["auto", "keep"])
@pytest.mark.parametrize("rounds", [4, 30])
def test_markers_of_both_modes_keep_the_rules_on_agent_bodies(
    policy: dict[str, Any], rounds: int
) -> None:
    body = history(rounds)
    body["system"] = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    body["messages"][2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    body["messages"][-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert_provider_takes(ctxwin.Policy(policy, counter=FakeCounter()).apply(body).request)


@pytest.mark.corpora
@pytest.mark.parametrize("policy", [AUTO, KEEP], ids=["auto", "keep"])
@pytest.mark.parametrize("path", corpus_params("anthropic"))
def test_markers_keep_the_rules_on_real_traces(policy: dict[str, Any], path: Any) -> None:
    body = copy.deepcopy(load(path))
    config = {**policy, "context_window": 20_000}
    assert_provider_takes(ctxwin.Policy(config, counter=FakeCounter()).apply(body).request)


def test_keep_moves_a_lost_marker_past_an_empty_text() -> None:
    """The user's marker sat on an image inside a result the window clears: the message
    keeps a marker, on its last block that takes one, not on the empty text after it."""
    body = history(25)
    msg = body["messages"][4]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    result = msg["content"][0]
    result["content"] = [
        {"type": "text", "text": result["content"]},
        {**image, "cache_control": {"type": "ephemeral"}},
    ]
    msg["content"].append({"type": "text", "text": ""})
    out = ctxwin.Policy(KEEP, counter=FakeCounter()).apply(body).request
    sent = out["messages"][4]["content"]  # type: ignore[index]
    assert "cleared" in str(sent[0]["content"])
    assert_provider_takes(out)
    assert "cache_control" in sent[0]


def test_keep_moves_a_cleared_result_s_marker_with_its_ttl() -> None:
    """The user marked an image inside a result ``ttl: "1h"``, and a later message too. When
    the window clears that result, the marker moves to the placeholder: as the default
    5-minute one it came before the later 1-hour marker (a 400)."""
    body = history(12)
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
    }
    first = body["messages"][2]["content"][0]
    first["content"] = [
        {"type": "text", "text": first["content"]},
        {**image, "cache_control": one_hour},
    ]
    last = body["messages"][-1]["content"][-1]
    last["cache_control"] = dict(one_hour)
    result = ctxwin.Policy(KEEP, counter=FakeCounter()).apply(copy.deepcopy(body))
    sent = result.request["messages"][2]["content"][0]
    assert "cleared" in json.dumps(sent)  # the window cleared it
    assert [v for w, _, v in markers(result.request) if w == "messages.2"] == [one_hour]
    assert_provider_takes(result.request)
