"""Cache breakpoints: where ctxwin puts them under ``auto``, what ``keep`` keeps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxwin
from ctxwin.formats import get_adapter
from ctxwin.replay import request_points
from ctxwin.testing import FakeCounter, agent_body
from tests.conftest import corpus_params, load

AUTO: dict[str, Any] = {
    "context_window": 4000,
    "cache_breakpoints": "auto",
    "window": {"trigger": 0.6, "target": 0.3},
    "pricing": {"cache_write": 1.25, "cache_read": 0.1, "min_prefix": 0},
}


def marks(body: dict[str, Any]) -> list[int]:
    key = "messages" if "messages" in body else "input"
    adapter = get_adapter(ctxwin.detect(body))
    return [i for i, m in enumerate(body[key]) if adapter.marker_of(m)]


def anthropic_history(rounds: int) -> dict[str, Any]:
    """An Anthropic agent body without a model (so no model's minimum prefix applies)."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 150))] for r in range(rounds)]
    body = agent_body(uses, format="anthropic")
    del body["model"]
    return body


def test_auto_marks_the_last_message_and_the_end_of_the_kept_prefix() -> None:
    body = anthropic_history(20)
    body["system"] = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    stale = body["messages"][4]["content"][0]
    stale["cache_control"] = {"type": "ephemeral"}  # the user's, from an earlier turn
    result = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body)
    out = result.request
    found = marks(out)  # type: ignore[arg-type]
    assert len(found) + 1 <= 4  # the system prompt's marker counts too
    assert found[-1] == len(out["messages"]) - 1  # type: ignore[index]
    assert 4 not in found or found == [4, len(out["messages"]) - 1]  # type: ignore[index]
    assert [m for m, _ in result.report.breakpoints] == found
    assert "cache_control" in stale  # the input is untouched


@pytest.mark.parametrize("rounds", [6, 25])
def test_auto_never_goes_over_the_providers_four(rounds: int) -> None:
    body = anthropic_history(rounds)
    body["system"] = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    body["tools"] = [
        {
            "name": f"t{i}",
            "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral"},
        }
        for i in range(3)
    ]
    out = ctxwin.Policy(AUTO, counter=FakeCounter()).apply(body).request
    assert len(marks(out)) == 0  # type: ignore[arg-type]  # 4 already on system and tools


def test_keep_leaves_the_users_markers_on_edited_blocks() -> None:
    body = anthropic_history(25)
    for m in body["messages"]:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("type") == "tool_result":
                block["cache_control"] = {"type": "ephemeral"}
    pol = ctxwin.Policy({**AUTO, "cache_breakpoints": "keep"}, counter=FakeCounter())
    out = pol.apply(body).request
    cleared = [
        b
        for m in out["messages"]  # type: ignore[index]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and "cleared" in str(b.get("content"))
    ]
    assert cleared
    assert all("cache_control" in b for b in cleared)


def test_openai_breakpoints_sit_on_content_parts_never_on_assistant_output() -> None:
    uses = [[(f"read{r}", {}, " ".join(["w"] * 150))] for r in range(8)]
    body = agent_body(uses, format="openai-responses")
    body["model"] = "gpt-5.6"
    # by size only: clearing would take the request under gpt-5.6's minimum cacheable prefix
    threshold = {**AUTO, "window": {**AUTO["window"], "strategy": "threshold"}}
    out = ctxwin.Policy(threshold, counter=FakeCounter()).apply(body).request
    items = out["input"]  # type: ignore[index]
    found = marks(out)  # type: ignore[arg-type]
    assert found
    for i in found:
        assert items[i].get("role") != "assistant"
        parts = items[i].get("output") or items[i].get("content")
        assert parts[-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}


def shared_prefix(adapter: Any, a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and adapter.unmarked(x) != adapter.unmarked(y):
            break
        n += 1
    return n


def check_breakpoints_stay_in_the_next_prefix(body: Any, fmt: str, policy: dict[str, Any]) -> int:
    adapter = get_adapter(fmt)
    body = adapter.listed(body)
    items = adapter.items_of(body)
    pol = ctxwin.Policy(policy, counter=FakeCounter(), format=fmt)
    previous: tuple[list[Any], list[int], int] | None = None
    checked = 0
    for t in request_points(body, fmt):
        result = pol.apply({**body, adapter.container: list(items[:t])})
        sent = list(adapter.items_of(result.request))
        found = [m for m, _ in result.report.breakpoints]
        if previous is not None and result.report.window_events == previous[2]:
            common = shared_prefix(adapter, previous[0], sent)
            assert all(m < common for m in previous[1]), (t, previous[1], common)
            checked += 1
        previous = (sent, found, result.report.window_events)
    return checked


def test_breakpoints_stay_inside_the_next_requests_prefix_on_a_long_agent() -> None:
    body = anthropic_history(60)
    assert check_breakpoints_stay_in_the_next_prefix(body, "anthropic", AUTO) > 20


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params("anthropic"))
def test_breakpoints_stay_inside_the_next_requests_prefix_on_real_traces(path: Any) -> None:
    body = copy.deepcopy(load(path))
    policy = {**AUTO, "context_window": 20_000}
    check_breakpoints_stay_in_the_next_prefix(body, "anthropic", policy)


@pytest.mark.parametrize(
    ("question", "context", "marked"),
    [(10, "current_turn", False), (1500, "current_turn", True), (10, None, True)],
)
def test_the_minimum_prefix_counts_what_openai_reads(
    question: int, context: str | None, marked: bool
) -> None:
    """gpt-5.6 caches nothing under 1,024 tokens. A breakpoint on the user's next message
    counts the prefix as OpenAI reads it: under ``reasoning.context: current_turn`` without
    the first turn's reasoning, which it drops (3,000 tokens here), so only a long enough
    question gets one; by default gpt-5.6 reads every turn's reasoning, and the prefix is
    long enough."""
    from tests.builders import sealed

    items = [
        {"role": "user", "content": " ".join(["q"] * question)},
        {"type": "reasoning", "summary": [], "encrypted_content": sealed(3000)},
        {"type": "message", "role": "assistant", "content": "done"},
        {"role": "user", "content": "and now?"},
    ]
    config = {"context_window": 100_000, "cache_breakpoints": "auto"}
    body = {"model": "gpt-5.6", "input": items}
    if context is not None:
        body["reasoning"] = {"context": context}
    result = ctxwin.Policy(config, counter=FakeCounter()).apply(body)
    assert result.limits.min_prefix == 1024
    assert (marks(result.request) == [3]) is marked  # type: ignore[arg-type]
    assert [m for m, _ in result.report.breakpoints] == ([3] if marked else [])


def test_an_openai_system_message_keeps_its_own_breakpoint_under_auto() -> None:
    """In OpenAI Chat the system prompt is a message: auto took its marker as a stale message
    marker and removed it, losing the most stable cached prefix. It stays, and counts."""
    uses = [[(f"read{r}", {}, " ".join(["w"] * 150))] for r in range(8)]
    body = agent_body(uses, format="openai-chat")
    body["model"] = "gpt-5.6"
    marker = {"mode": "explicit"}
    system = [{"type": "text", "text": "You are an agent.", "prompt_cache_breakpoint": marker}]
    body["messages"][0]["content"] = system
    threshold = {**AUTO, "window": {**AUTO["window"], "strategy": "threshold"}}
    out = ctxwin.Policy(threshold, counter=FakeCounter()).apply(body).request
    assert out["messages"][0]["content"] == system  # type: ignore[index]
    found = marks(out)  # type: ignore[arg-type]
    assert found[0] == 0
    assert 1 < len(found) <= 4  # and ctxwin's own beside it
