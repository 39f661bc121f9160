"""Anthropic Messages in depth: every block a request may hold (``anthropic.types`` and
``anthropic.types.beta`` of the SDK), what ctxwin does with each, and the request rules it
must keep (tool results first in the next message, thinking kept exact, at most four cache
breakpoints)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError, Opaque, Text, ToolResult
from ctxwin.formats import get_adapter

FMT = "anthropic"
CC = {"type": "ephemeral"}
THINKING = {"type": "thinking", "thinking": "Plan the lookup.", "signature": "EqEECkYICxgC=="}
REFERENCE = {"type": "tool_reference", "tool_name": "refund"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
TEXT_SOURCE = {"type": "text", "media_type": "text/plain"}
TEXT_DOC = "The quick brown fox jumps over the lazy dog. " * 2000  # ~18k tokens of text


def tool_use(cid: str, name: str = "f", args: dict[str, Any] | None = None, **extra: Any) -> Any:
    return {"type": "tool_use", "id": cid, "name": name, "input": args or {}, **extra}


def result(cid: str, content: object = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": content, **extra}


def asst(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def carrier(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def rounds(n: int, content: str, *, prefix: str = "c", name: str = "f") -> list[dict[str, Any]]:
    """``n`` rounds of one call each, answered with ``content``."""
    return [
        m
        for i in range(n)
        for m in (asst(tool_use(f"{prefix}{i}", name)), carrier(result(f"{prefix}{i}", content)))
    ]


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You help.",
        "messages": list(messages),
        **extra,
    }


def server_blocks() -> list[dict[str, Any]]:
    """Every server tool with its result, as a response carries them (same assistant turn)."""
    pairs = [
        ("web_search", {"query": "q"}, "web_search_tool_result", [
            {"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e"}
        ]),
        ("web_fetch", {"url": "u"}, "web_fetch_tool_result", {
            "type": "web_fetch_result",
            "url": "u",
            "content": {"type": "document", "source": {
                "type": "text", "media_type": "text/plain", "data": "page"}},
        }),
        ("code_execution", {"code": "1"}, "code_execution_tool_result", {
            "type": "code_execution_result", "stdout": "1", "stderr": "", "return_code": 0,
            "content": []}),
        ("bash_code_execution", {"command": "ls"}, "bash_code_execution_tool_result", {
            "type": "bash_code_execution_result", "stdout": "a", "stderr": "",
            "return_code": 0, "content": []}),
        ("text_editor_code_execution", {"command": "view", "path": "/a"},
         "text_editor_code_execution_tool_result", {
            "type": "text_editor_code_execution_view_result", "content": "x",
            "file_type": "text"}),
        ("tool_search_tool_regex", {"pattern": "refund"}, "tool_search_tool_result", {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "refund"}]}),
    ]  # fmt: skip
    out: list[dict[str, Any]] = []
    for k, (name, args, kind, content) in enumerate(pairs):
        sid = f"srvtoolu_{k}"
        out.append({"type": "server_tool_use", "id": sid, "name": name, "input": args})
        out.append({"type": kind, "tool_use_id": sid, "content": content})
    out.append(
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "m", "server_name": "s", "input": {}}
    )
    out.append(
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_1",
            "content": "mcp",
            "is_error": False,
        }
    )
    return out


def every_block_body() -> dict[str, Any]:
    """A request with every block type the SDK's ``ContentBlockParam`` (and the beta's)
    lists, every document and image source, and the body keys ctxwin passes through."""
    sources = [
        {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
        {"type": "text", "media_type": "text/plain", "data": "hello"},
        {"type": "content", "content": [{"type": "text", "text": "a"}]},
        {"type": "url", "url": "https://x/y.pdf"},
        {"type": "file", "file_id": "file_1"},
    ]
    images = [
        {"type": "base64", "media_type": "image/png", "data": "iVBO"},
        {"type": "url", "url": "https://x/y.png"},
        {"type": "file", "file_id": "file_2"},
    ]
    search = {
        "type": "search_result",
        "source": "https://x",
        "title": "T",
        "content": [{"type": "text", "text": "found it"}],
        "citations": {"enabled": True},
    }
    cited = {
        "type": "text",
        "text": "It is found.",
        "citations": [
            {
                "type": "search_result_location",
                "source": "https://x",
                "title": "T",
                "cited_text": "found it",
                "search_result_index": 0,
                "start_block_index": 0,
                "end_block_index": 1,
            }
        ],
    }
    return body(
        carrier(
            {"type": "text", "text": "read these", "cache_control": CC},
            *({"type": "document", "source": s, "title": "d"} for s in sources),
            *({"type": "image", "source": s} for s in images),
            search,
            {"type": "container_upload", "file_id": "file_3"},
        ),
        {"role": "system", "content": [{"type": "tool_addition", "tool": REFERENCE}]},
        asst(
            THINKING,
            REDACTED,
            cited,
            *server_blocks(),
            {"type": "compaction", "content": "earlier: the user asked for a refund"},
            tool_use("c1", "refund", {"id": "A1"}, caller={"type": "direct"}),
            tool_use("c2", "search"),
        ),
        carrier(
            result("c1", [{"type": "text", "text": "done"}, dict(search)], is_error=False),
            result("c2", [{"type": "tool_reference", "tool_name": "refund"}], cache_control=CC),
            {"type": "text", "text": "thanks"},
        ),
        asst({"type": "text", "text": "Refunded."}),
        user("and now?"),
        system=[{"type": "text", "text": "You help.", "cache_control": CC}],
        tools=[
            {"name": "refund", "input_schema": {"type": "object"}, "defer_loading": True,
             "input_examples": [{"id": "A1"}]},
            {"name": "search", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        thinking={"type": "enabled", "budget_tokens": 2048},
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        container="container_1",
        mcp_servers=[{"type": "url", "url": "https://mcp.example", "name": "s"}],
    )  # fmt: skip


def markers(request: object) -> int:
    """Cache breakpoints a request carries, the top-level one (automatic caching) included."""
    return json.dumps(request).count('"cache_control": {')


# ------------------------------------------------------------------------------ every block


def test_every_block_type_round_trips_as_the_very_same_objects() -> None:
    b = every_block_body()
    out = ctxwin.render(ctxwin.parse(b))
    assert out == b
    assert isinstance(out, dict)
    assert all(x is y for x, y in zip(out["messages"], b["messages"], strict=True))


def test_every_block_type_is_detected_and_checks_clean() -> None:
    b = every_block_body()
    assert ctxwin.detect(b) == FMT
    assert ctxwin.check(b) == []


def test_server_and_mcp_tools_are_opaque_and_never_paired_by_the_client() -> None:
    conv = ctxwin.parse(every_block_body())
    assert [c.id for _, c in conv.calls()] == ["c1", "c2"]
    kinds = {b.kind for b in conv.messages[2].blocks if isinstance(b, Opaque)}
    assert {"server_tool_use", "web_fetch_tool_result", "mcp_tool_result", "compaction"} <= kinds


def test_tool_result_parts_are_text_or_opaque() -> None:
    conv = ctxwin.parse(every_block_body())
    first, second = conv.messages[3].blocks[:2]
    assert isinstance(first, ToolResult)
    assert isinstance(second, ToolResult)
    assert first.content == (Text("done"), Opaque("search_result"))
    assert second.content == (Opaque("tool_reference"),)


def test_apply_with_clearing_and_drops_keeps_the_input_and_gives_a_valid_request() -> None:
    b = every_block_body()
    del b["thinking"]  # the rounds added have none: with thinking on, the turn would need one
    b["messages"] += rounds(6, "w x " * 800, prefix="x")
    before = copy.deepcopy(b)
    policy = ctxwin.load_policy(
        {"context_window": 4000, "window": {"keep_rounds": 1, "clear_tool_inputs": True}}
    )
    out = policy.apply(b)
    assert b == before
    assert out.report.edits
    assert ctxwin.check(out.request, format=FMT) == []


# ------------------------------------------------------------------------------ thinking


def test_thinking_blocks_stay_exact_and_in_place_when_a_round_is_cleared() -> None:
    """Clearing an old round's result and inputs leaves its assistant message's thinking
    blocks as they were, first, signature and all."""
    big = "line of output\n" * 600
    b = body(
        user("do it"),
        asst(THINKING, REDACTED, tool_use("c1", "f", {"path": "x" * 2000})),
        carrier(result("c1", big)),
        asst(THINKING, tool_use("c2")),
        carrier(result("c2", big)),
        asst(THINKING, tool_use("c3")),
        carrier(result("c3", big)),
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    policy = ctxwin.load_policy(
        {"context_window": 6000, "window": {"keep_rounds": 1, "clear_tool_inputs": True}}
    )
    out = policy.apply(b).request
    assert isinstance(out, dict)
    first = out["messages"][1]["content"]
    assert first[2]["input"] != {"path": "x" * 2000}  # the round was cleared
    assert first[0] is b["messages"][1]["content"][0]
    assert first[1] is b["messages"][1]["content"][1]
    assert out["messages"][5]["content"][0] is b["messages"][5]["content"][0]


# ------------------------------------------------------------------------------ pairing


def test_results_split_over_consecutive_user_messages_are_one_error() -> None:
    """The API checks pairing before it merges consecutive user messages: a second
    result in the message after the next one is refused."""
    b = body(
        user("go"), asst(tool_use("a"), tool_use("b")), carrier(result("a")), carrier(result("b"))
    )
    assert [p.code for p in ctxwin.check(b)] == ["misplaced_result"]


def test_results_split_over_consecutive_user_messages_are_merged_by_repair() -> None:
    b = body(
        user("go"), asst(tool_use("a"), tool_use("b")), carrier(result("a")), carrier(result("b"))
    )
    fixed = ctxwin.repair(b).body
    assert isinstance(fixed, dict)
    assert fixed["messages"][2] == carrier(result("a"), result("b"))
    assert len(fixed["messages"]) == 3


def test_an_edited_call_keeps_its_caller_and_toolset_fields() -> None:
    """Programmatic tool calling: ``caller`` (and a toolset's ``toolset_name``) are fields
    of the call an edit of its input must keep."""
    extra = {"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}}
    program = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}}
    b = body(
        user("go"),
        asst(program, tool_use("c1", "f", {"q": "x" * 3000}, **extra)),
        carrier(result("c1", "r " * 900, toolset_name="browser")),
        *rounds(3, "w " * 900, prefix="x"),
    )
    policy = ctxwin.load_policy(
        {"context_window": 3000, "window": {"keep_rounds": 1, "clear_tool_inputs": True}}
    )
    out = policy.apply(b).request
    assert isinstance(out, dict)
    call = out["messages"][1]["content"][1]
    assert call["input"] != {"q": "x" * 3000}
    assert call["caller"] == extra["caller"]
    assert out["messages"][2]["content"][0]["toolset_name"] == "browser"


# ------------------------------------------------------------------------------ system messages


def test_a_system_message_of_text_is_detected_in_a_body_with_a_system_prompt() -> None:
    """The SDK's ``MessageParam`` takes ``role: "system"`` messages; with a top-level
    ``system`` (which OpenAI Chat has not) the body is surely Anthropic."""
    b = body(
        user("hi"),
        {"role": "system", "content": "be brief now"},
        asst({"type": "text", "text": "ok"}),
    )
    assert ctxwin.detect(b) == FMT


def test_a_system_message_with_clear_at_is_surely_anthropic() -> None:
    b = {"messages": [user("hi"), {"role": "system", "content": "x", "clear_at": "never"}]}
    assert get_adapter(FMT).detect(b) == 2


def test_a_chat_system_prompt_with_a_cache_marker_is_not_anthropic() -> None:
    """LiteLLM takes ``cache_control`` in OpenAI Chat bodies: a marker alone does not make a
    body with a system prompt message Anthropic."""
    b = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CC}]},
        ]
    }
    assert get_adapter(FMT).detect(b) == 0


def test_a_system_message_without_content_parses_and_round_trips() -> None:
    """``BetaSystemMessageParam``: ``content`` is optional, ``output_config`` alone will do."""
    system = {"role": "system", "output_config": {"effort": "low"}}
    b = body(user("hi"), system, asst({"type": "text", "text": "ok"}))
    conv = ctxwin.parse(b)
    assert conv.messages[1].role == "system"
    assert conv.messages[1].blocks == ()
    assert ctxwin.render(conv) == b


def test_a_system_message_without_content_is_written_without_content() -> None:
    system = {"role": "system", "output_config": {"effort": "low"}}
    conv = ctxwin.parse(body(user("hi"), system), format=FMT)
    msg = conv.messages[1].with_blocks(())
    assert get_adapter(FMT).render_message(msg, conv) == system


def test_a_user_message_without_content_is_still_a_format_error() -> None:
    with pytest.raises(FormatError) as info:
        ctxwin.parse(body({"role": "user"}), format=FMT)
    assert str(info.value) == (
        "messages[0].content: 'content' must be a string or a list of blocks, and is missing"
    )


# ------------------------------------------------------------------------------ documents


def _document_round(doc: dict[str, Any]) -> dict[str, Any]:
    later = rounds(2, "x", prefix="d", name="fetch")
    return body(user("go"), asst(tool_use("c1", "fetch")), carrier(result("c1", [doc])), *later)


def test_a_text_document_is_counted_by_its_text() -> None:
    doc = {"type": "document", "source": {**TEXT_SOURCE, "data": TEXT_DOC}}
    report = ctxwin.load_policy({}).apply(_document_round(doc)).report
    assert report.tokens_before > 15_000


def test_a_content_document_is_counted_by_its_text() -> None:
    source = {"type": "content", "content": [{"type": "text", "text": TEXT_DOC}]}
    doc = {"type": "document", "source": source}
    report = ctxwin.load_policy({}).apply(_document_round(doc)).report
    assert report.tokens_before > 15_000


def test_the_window_clears_a_result_holding_a_large_text_document() -> None:
    """Counted as a 1,000-token image, an 18k-token document passed an 8k window untouched
    and the provider refused the request as too long."""
    doc = {"type": "document", "source": {**TEXT_SOURCE, "data": TEXT_DOC}}
    policy = ctxwin.load_policy({"context_window": 8000, "window": {"keep_rounds": 1}})
    out = policy.apply(_document_round(doc))
    assert [(e.step, e.call_id) for e in out.report.edits] == [("window", "c1")]
    assert out.report.tokens_after < 8000


def test_a_pdf_document_stays_a_media_estimate() -> None:
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "J" * 40_000},
    }
    res = ctxwin.parse(_document_round(pdf)).messages[2].blocks[0]
    assert isinstance(res, ToolResult)
    (part,) = res.content
    assert isinstance(part, Opaque)
    assert part.category == "media"


# ------------------------------------------------------------------------------ tool search


def test_a_result_of_tool_references_is_never_cleared() -> None:
    """A client-side tool search answers with ``tool_reference`` blocks the API expands into
    the deferred tools' definitions: clearing it unloads tools later calls use."""
    found = result("s1", [{"type": "text", "text": "found " * 300}, REFERENCE])
    later = rounds(6, "some words here and there " * 400, name="refund")
    b = body(user("go"), asst(tool_use("s1", "search_tools")), carrier(found), *later)
    policy = ctxwin.load_policy({"context_window": 8000, "window": {"keep_rounds": 1}})
    out = policy.apply(b)
    assert "s1" not in {e.call_id for e in out.report.edits}
    assert isinstance(out.request, dict)
    assert out.request["messages"][2] is b["messages"][2]


# ------------------------------------------------------------------------------ cache breakpoints


def test_a_top_level_cache_control_counts_as_a_breakpoint() -> None:
    b = body(
        user("hi"), system=[{"type": "text", "text": "s", "cache_control": CC}], cache_control=CC
    )
    assert ctxwin.parse(b).envelope_marks == 2


def test_automatic_caching_keeps_the_request_within_four_breakpoints() -> None:
    """A top-level ``cache_control`` takes one of the four breakpoints (Anthropic: "A
    maximum of 4 blocks with cache_control may be provided. Found 5.")."""
    b = body(
        user("go"),
        *rounds(16, "some words here and there " * 400),
        cache_control=CC,
        system=[{"type": "text", "text": "sys " * 600, "cache_control": CC}],
        tools=[{"name": "f", "input_schema": {"type": "object"}, "cache_control": CC}],
    )
    policy = ctxwin.load_policy({"cache_breakpoints": "auto", "context_window": 8000})
    assert markers(policy.apply(b).request) <= 4
