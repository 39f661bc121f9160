"""The report of a request repair fixed: what repair added or took away is repair's (its
edits, the ``repaired`` figures of tools and rounds), never a tool's call or a step's saving."""

from __future__ import annotations

import copy
import importlib
import json
import os
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin._core.model import ToolCall
from ctxwin._report.html import report_html
from ctxwin._report.markdown import reports_markdown
from ctxwin._report.text import reports_text
from ctxwin.testing import agent_body
from tests.strategies import damage, scripts

WIDE = ctxwin.load_policy({"context_window": 100_000})
"""A policy whose steps edit nothing in these small requests: only repair changes them."""


def _call(cid: str, name: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


INTERRUPTED = {  # a human-in-the-loop step interrupted the call: no result for it
    "messages": [
        {"role": "user", "content": "look up the order"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "get_order")]},
        {"role": "user", "content": "never mind, what's the weather?"},
    ]
}
ORPHAN = {
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_x", "content": "orphan output " * 20},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go"},
    ]
}
DUPLICATE = {
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "lookup")]},
        {"role": "tool", "tool_call_id": "c1", "content": "found it " * 20},
        {"role": "tool", "tool_call_id": "c1", "content": "again " * 20},
        {"role": "user", "content": "go"},
    ]
}
ANTHROPIC_HALF_ANSWERED = {  # two calls, one result (and the user's next words after it)
    "messages": [
        {"role": "user", "content": "look both up"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "tu1", "name": "get_order", "input": {}},
                {"type": "tool_use", "id": "tu2", "name": "get_user", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu1", "content": "order 7 " * 10},
                {"type": "text", "text": "and hurry"},
            ],
        },
    ]
}
ANTHROPIC_FIRST_ASSISTANT = {
    "messages": [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "go"}]
}
BODIES = {
    "interrupted": ("openai-chat", INTERRUPTED),
    "orphan": ("openai-chat", ORPHAN),
    "duplicate": ("openai-chat", DUPLICATE),
    "anthropic-half-answered": ("anthropic", ANTHROPIC_HALF_ANSWERED),
    "anthropic-first-assistant": ("anthropic", ANTHROPIC_FIRST_ASSISTANT),
}


def _parsed_calls(body: object, fmt: str | None = None) -> Counter[str]:
    conv = ctxwin.parse(copy.deepcopy(body), format=fmt)
    return Counter(b.name for m in conv.messages for b in m.blocks if isinstance(b, ToolCall))


def _row(text: str, first: str) -> list[str]:
    """The cells of the first text-table row starting with ``first``."""
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in\n{text}")


def test_a_result_repair_added_is_the_tool_s_after_and_repair_s_not_a_negative_saving() -> None:
    """The interrupted call's tool was called once; the 8-token error result repair wrote
    for it is after, added by repair: the steps saved nothing on it."""
    report = WIDE.apply(INTERRUPTED).report
    [tool] = report.tools
    assert (tool.tool, tool.calls, tool.tokens_before) == ("get_order", 1, 0)
    assert tool.repaired == tool.tokens_after > 0
    assert tool.saved == 0
    row = {"tool": "get_order", "calls": 1, "tokens_before": 0, "repaired": tool.tokens_after}
    assert json.loads(report.to_json())["tools"] == [
        {**row, "tokens_after": tool.tokens_after, "saved": 0, "share": round(tool.share, 4)}
    ]
    n = f"{tool.tokens_after}"
    assert _row(report.to_text(), "tool") == [
        "tool",
        "calls",
        "before",
        "repair",
        "after",
        "saved",
        "share",
    ]
    assert _row(report.to_text(), "get_order") == ["get_order", "1", "0", f"+{n}", n, "0", "18.2%"]
    assert f"| get_order | 1 | 0 | +{n} | {n} | 0 | 18.2% |" in report.to_markdown()


def test_the_round_of_an_interrupted_call_carries_the_result_repair_added() -> None:
    report = WIDE.apply(INTERRUPTED).report
    [rnd] = report.rounds
    assert rnd.tokens_after > rnd.tokens_before  # was 9 -> 9: the added result left out
    assert rnd.repaired > 0
    assert rnd.tokens_after == rnd.tokens_before + rnd.repaired
    assert rnd.state == "kept"  # the policy kept it: repair made it bigger
    assert json.loads(report.to_json())["rounds"][0]["repaired"] == rnd.repaired


def test_a_dropped_orphan_result_is_repair_s_edit_not_a_tool_with_a_call() -> None:
    report = WIDE.apply(ORPHAN).report
    assert report.tools == ()
    [edit] = report.edits
    assert (edit.step, edit.call_id, edit.note) == ("repair", "call_x", "dropped_orphan_result")
    assert edit.saved == report.saved > 0
    assert "?" not in report.to_text().split("edits:")[0]


def test_a_dropped_duplicate_result_counts_for_its_call_s_tool_as_repair() -> None:
    report = WIDE.apply(DUPLICATE).report
    [tool] = report.tools
    assert (tool.tool, tool.calls) == ("lookup", 1)
    assert tool.tokens_before > tool.tokens_after == tool.tokens_before + tool.repaired
    assert tool.saved == 0


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_edits_add_up_to_the_saved_total_after_repair(name: str) -> None:
    """Repair's edits (one per fix that added or took tokens, first) and the steps' edits
    save what the request saved."""
    fmt, body = BODIES[name]
    result = WIDE.apply(body, format=fmt)
    report = result.report
    assert result.fixes
    assert report.saved != 0
    assert [e.step for e in report.edits] == ["repair"] * len(report.edits)
    assert sum(e.saved for e in report.edits) == report.saved
    assert {e.note for e in report.edits} <= {f.code for f in result.fixes}
    assert {t.tool: t.calls for t in report.tools if t.calls} == dict(_parsed_calls(body, fmt))
    assert all(t.saved == 0 for t in report.tools)  # the steps edited nothing
    assert all(r.state == "kept" for r in report.rounds)


def test_when_the_window_drops_a_round_repair_completed_both_edits_count() -> None:
    """The oldest round's call was interrupted: repair added its result, and the window
    then dropped the round with it. The drop saved the added result too; repair's edit
    says what it had added."""
    rounds = [[("read", {"path": f"f{r}.py"}, "code " * 300)] for r in range(8)]
    body = agent_body(rounds, format="openai-chat")
    del body["messages"][3]  # the first round's result
    policy = ctxwin.load_policy(
        {"context_window": 500, "window": {"strategy": "threshold", "keep_rounds": 1}}
    )
    result = policy.apply(body)
    report = result.report
    assert [f.code for f in result.fixes] == ["added_missing_result"]
    assert {e.step for e in report.edits} >= {"repair", "drop"}
    assert sum(e.saved for e in report.edits) == report.saved
    first = report.rounds[0]
    assert (first.state, first.tokens_after) == ("dropped", 0)
    assert first.repaired > 0
    [read] = report.tools
    assert read.calls == 8
    assert read.saved == read.tokens_before + read.repaired - read.tokens_after > 0


def test_the_html_bars_share_one_scale_and_stay_on_the_page() -> None:
    """A result repair added is longer after than before: its bar is drawn on the same
    scale as the rest, within the 380 px the bars have (4,000 px once, on a 900 px page)."""
    for fmt, body in (BODIES["interrupted"], BODIES["anthropic-half-answered"]):
        page = report_html(WIDE.apply(body, format=fmt).report)
        widths = [
            float(w) for w in re.findall(r'class="(?:before|after)" [^>]*width="([\d.]+)"', page)
        ]
        assert widths
        assert max(widths) == 380.0


def test_the_totals_over_requests_carry_repair_s_column() -> None:
    items = [("a.json", WIDE.apply(INTERRUPTED).report), ("b.json", WIDE.apply(DUPLICATE).report)]
    text = reports_text(items)
    assert "repair" in text.split("tools over all requests:")[1].splitlines()[1]
    assert "| tool | calls | before | repair | after | saved | share |" in reports_markdown(items)


def test_without_repair_the_tables_are_as_they_were() -> None:
    report = WIDE.apply(agent_body([[("read", {}, "code " * 50)]])).report
    assert report.tools[0].repaired == 0
    assert "repair" not in report.to_text()
    assert "| tool | calls | before | after | saved | share |" in report.to_markdown()


# ------------------------------------------------------------------------- generated damage


def _each_fix_books_its_own_change(result: ctxwin.Result) -> None:
    """Each result repair added is its own call's edit, adding tokens; a drop saves, an
    addition costs."""
    edits = [e for e in result.report.edits if e.step == "repair"]
    added = [e for e in edits if e.note == "added_missing_result"]
    assert Counter((e.call_id, e.message_index, e.tool) for e in added) == Counter(
        (f.call_id, f.message_index, f.tool)
        for f in result.fixes
        if f.code == "added_missing_result"
    )
    assert all(e.tokens_before == 0 < e.tokens_after for e in added)
    assert all(e.saved >= 0 for e in edits if (e.note or "").startswith("dropped_"))
    assert all(e.saved <= 0 for e in edits if (e.note or "").startswith("added_"))


FORMATS = ["openai_chat", "anthropic", "openai_responses", "gemini"]
POLICIES = [
    WIDE,
    ctxwin.load_policy(
        {
            "context_window": 400,
            "tools": {"*": {"max_tokens": 24}},
            "window": {
                "strategy": "threshold",
                "keep_rounds": 1,
                "clear_tool_inputs": True,
                "clear_reasoning": True,
            },
        }
    ),
]


@pytest.mark.parametrize("name", FORMATS)
@settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_damaged_conversations_report_what_repair_did_apart(name: str, data: st.DataObject) -> None:
    """Over generated damage in every format: the edits add up to the saved total, each
    tool's calls are its calls in the request, and what a policy that edits nothing reports
    as saved per tool and per round is nothing."""
    b = importlib.import_module(f"tests.formats.builders.{name}")
    body: dict[str, Any] = b.build(data.draw(scripts()))
    items, _ = data.draw(damage(body[b.CONTAINER], b.user))
    damaged = {**body, b.CONTAINER: items}
    try:
        ctxwin.repair(damaged, format=b.FORMAT)
    except ctxwin.InputError:
        return  # nothing left to send once repaired (tested with repair)
    for policy in POLICIES:
        result = policy.apply(damaged, format=b.FORMAT)
        report = result.report
        assert sum(e.saved for e in report.edits) == report.saved
        _each_fix_books_its_own_change(result)
        calls = _parsed_calls(damaged, b.FORMAT)
        assert {t.tool: t.calls for t in report.tools if t.calls} == dict(calls)
        if policy is WIDE:
            assert all(t.saved == 0 for t in report.tools)
            for r in report.rounds:
                assert (r.state, r.tokens_after) == ("kept", r.tokens_before + r.repaired)


# ------------------------------------------------------------- which fix made which change


def _repairs(report: ctxwin.Report) -> list[tuple[str | None, str, str | None, int, int]]:
    """The repair edits: (fix code, tool, call id, tokens before, tokens after)."""
    return [
        (e.note, e.tool, e.call_id, e.tokens_before, e.tokens_after)
        for e in report.edits
        if e.step == "repair"
    ]


PARALLEL_INTERRUPTED = {  # the user stopped the agent mid-batch: no result for either call
    "anthropic": {
        "messages": [
            {"role": "user", "content": "read both files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "Read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "c2", "name": "Grep", "input": {"pattern": "x"}},
                ],
            },
            {"role": "user", "content": "[Request interrupted by user for tool use] stop"},
        ]
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "read both files"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "c1", "name": "Read", "args": {"path": "a"}}},
                    {"functionCall": {"id": "c2", "name": "Grep", "args": {"pattern": "x"}}},
                ],
            },
            {"role": "user", "parts": [{"text": "stop"}]},
        ]
    },
    "openai-chat": {
        "messages": [
            {"role": "user", "content": "read both files"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("c1", "Read"), _call("c2", "Grep")],
            },
            {"role": "user", "content": "stop"},
        ]
    },
}


@pytest.mark.parametrize("fmt", sorted(PARALLEL_INTERRUPTED))
def test_parallel_calls_interrupted_together_are_one_added_result_each(fmt: str) -> None:
    """Repair writes both error results into one message (Anthropic, Gemini): each is its
    own call's edit (there was one, for the first tool, holding both, and none for the
    second)."""
    result = WIDE.apply(PARALLEL_INTERRUPTED[fmt], format=fmt)
    report = result.report
    assert [(f.code, f.tool) for f in result.fixes] == [
        ("added_missing_result", "Read"),
        ("added_missing_result", "Grep"),
    ]
    edits = _repairs(report)
    assert [e[:3] for e in edits] == [
        ("added_missing_result", "Read", "c1"),
        ("added_missing_result", "Grep", "c2"),
    ]
    assert all(before == 0 < after for *_, before, after in edits)
    assert sum(e.saved for e in report.edits) == report.saved


def test_a_duplicate_dropped_and_a_result_added_in_one_message_are_two_edits() -> None:
    """One user message answers the first call twice and the second not at all: the copy
    dropped is the first call's tool's saving, the result added the second's cost (they
    were one edit, the drop 'before 121 after 8', the 8 the other tool's result)."""
    copy_ = {"type": "tool_result", "tool_use_id": "tu1", "content": "order 7 shipped " * 30}
    body = {
        "messages": [
            *ANTHROPIC_HALF_ANSWERED["messages"][:2],  # the same two calls
            {"role": "user", "content": [copy_, dict(copy_)]},
            {"role": "user", "content": "thanks"},
        ]
    }
    report = WIDE.apply(body, format="anthropic").report
    dropped, added = _repairs(report)
    assert dropped[:3] == ("dropped_duplicate_result", "get_order", "tu1")
    assert dropped[3] > 100
    assert dropped[4] == 0
    assert added[:4] == ("added_missing_result", "get_user", "tu2", 0)
    assert 0 < added[4] < 20  # the error result alone
    assert sum(e.saved for e in report.edits) == report.saved


def test_a_duplicate_dropped_beside_a_result_moved_out_saves_and_the_move_pays() -> None:
    """Results sent before their call, in the message of the user's next words, with a copy
    of an earlier call's result: repair drops the copy and moves the other result into a
    message of its own after its call. The new message's overhead is the move's (it was the
    drop's, which then cost 2 tokens: 'before 1 after 3')."""
    body = {
        "messages": [
            {"role": "user", "content": "look it up"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "get_order", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}],
            },
            {"role": "assistant", "content": "done"},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "ok"},
                    {"type": "text", "text": "and the next"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c2", "name": "get_user", "input": {}}],
            },
        ]
    }
    result = WIDE.apply(body, format="anthropic")
    assert [(f.code, f.call_id) for f in result.fixes] == [
        ("dropped_duplicate_result", "c1"),
        ("moved_result", "c2"),
    ]
    report = result.report
    edits = _repairs(report)
    assert [e[:3] for e in edits] == [
        ("dropped_duplicate_result", "get_order", "c1"),
        ("moved_result", "get_user", "c2"),
    ]
    dropped, moved = edits
    assert dropped[3] > 0 == dropped[4]  # the copy, gone
    assert moved[4] > moved[3] > 0  # the result, in a message of its own
    assert sum(e.saved for e in report.edits) == report.saved


def test_fixes_for_one_call_id_in_two_turns_are_told_apart() -> None:
    """An OpenAI Chat body for a Claude model from an agent numbering ids per turn: turn 1's
    call_0 was interrupted, turn 2's call_0 is renamed. The result added is turn 1's tool's
    (the rename took its tokens, as '(no tool)'); the rename names its call's tool and,
    adding nothing, has no edit."""
    body = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": "look up order 7"},
            {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "get_order")]},
            {"role": "user", "content": "never mind, search the docs instead"},
            {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "search_docs")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "doc hit " * 40},
            {"role": "user", "content": "thanks"},
        ],
    }
    result = WIDE.apply(body)
    assert [(f.code, f.tool, f.message_index) for f in result.fixes] == [
        ("renamed_duplicate_call_id", "search_docs", 3),
        ("added_missing_result", "get_order", 1),
    ]
    [edit] = [e for e in result.report.edits if e.step == "repair"]
    assert (edit.note, edit.tool, edit.message_index) == ("added_missing_result", "get_order", 1)
    assert edit.tokens_before == 0 < edit.tokens_after
    assert "(no tool)" not in result.report.to_text()


def test_a_turn_sent_twice_reports_the_result_added_for_the_first() -> None:
    """A retry appended the assistant turn again: the copy's call is renamed (its result
    follows it) and the first one's interrupted call gets an error result, Glob's."""
    turn = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "Glob", "input": {}}],
    }
    body = {
        "messages": [
            {"role": "user", "content": "find the python files"},
            turn,
            dict(turn),
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.py"}],
            },
            {"role": "user", "content": "thanks"},
        ]
    }
    report = WIDE.apply(body, format="anthropic").report
    [(code, tool, call_id, before, after)] = _repairs(report)
    assert (code, tool, call_id, before) == ("added_missing_result", "Glob", "toolu_01", 0)
    assert after > 0


def test_a_result_renamed_and_moved_is_neither_fix_s_saving() -> None:
    """The copy of a turn sent twice is renamed, and its result, behind a user's words, moves
    up into a message of its own: the move took one message and wrote one alike, the rename
    changed no token. Neither costs anything; the result added for the first turn does (the
    rename, as '(no tool)', held that result; the move read 'before 0 after 4')."""
    turn = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "toolu_01", "name": "memory", "input": {"view": "/"}},
        ],
    }
    body = {
        "messages": [
            {"role": "user", "content": "what do you remember?"},
            turn,
            dict(turn),
            {"role": "user", "content": "go on"},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "notes"}],
            },
        ]
    }
    result = WIDE.apply(body, format="anthropic")
    assert {f.code for f in result.fixes} == {
        "renamed_duplicate_call_id",
        "added_missing_result",
        "moved_result",
    }
    [(code, tool, *_)] = _repairs(result.report)
    assert (code, tool) == ("added_missing_result", "memory")


def test_renames_of_one_id_repeated_in_a_turn_change_no_figure() -> None:
    """Three parallel calls all ``call_0``: repair renames two, which changes no token. The
    fixes taken on the side as parsed were taken on the side as repaired too, so both
    renamed blocks fell to the first fix: one rename cost a whole call, the other saved one
    (review of f1634f1)."""

    def use(name: str, q: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": "call_0", "name": name, "input": {"q": q}}

    def res(text: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": "call_0", "content": text}

    body = {
        "messages": [
            {"role": "user", "content": "look things up"},
            {
                "role": "assistant",
                "content": [use("search", "a"), use("search", "weather " * 8), use("fetch", "u")],
            },
            {"role": "user", "content": [res("r0"), res("r1"), res("r2")]},
        ]
    }
    report = WIDE.apply(body, format="anthropic").report
    assert [f.code for f in report.fixes] == ["renamed_duplicate_call_id"] * 2
    assert [(e.note, e.saved) for e in report.edits if e.step == "repair"] == []
    assert report.saved == 0


_LONG = "\n".join(f"line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(300))


def _answered_twice(fmt: str) -> dict[str, Any]:
    """One call, its result sent twice (each result a message of its own in the OpenAI
    formats, one content or message in the others)."""
    if fmt == "openai-chat":
        return {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [_call("a", "read")]},
                {"role": "tool", "tool_call_id": "a", "content": _LONG},
                {"role": "tool", "tool_call_id": "a", "content": _LONG},
                {"role": "user", "content": "more"},
            ]
        }
    if fmt == "openai-responses":
        out = {"type": "function_call_output", "call_id": "a", "output": _LONG}
        return {
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
                out,
                dict(out),
                {"role": "user", "content": "more"},
            ]
        }
    if fmt == "anthropic":
        res = {"type": "tool_result", "tool_use_id": "a", "content": _LONG}
        return {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}],
                },
                {"role": "user", "content": [res, dict(res)]},
                {"role": "user", "content": "more"},
            ]
        }
    part = {"functionResponse": {"id": "a", "name": "read", "response": {"output": _LONG}}}
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "read", "args": {}}}]},
            {"role": "user", "parts": [part, copy.deepcopy(part)]},
            {"role": "user", "parts": [{"text": "more"}]},
        ]
    }


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_a_dropped_duplicate_result_counts_in_the_round_of_the_call_it_repeats(fmt: str) -> None:
    """Where each result is a message of its own (OpenAI Chat, Responses), the duplicate's
    message belonged to no round: the round reported half the tokens it held and repaired
    nothing, while the tool table and repair's edit counted the duplicate. The round's
    figure is the edit's (the message's overhead with it); the tool's, the result's alone."""
    result = WIDE.apply(_answered_twice(fmt), format=fmt)
    assert [f.code for f in result.fixes] == ["dropped_duplicate_result"]
    [rnd] = result.report.rounds
    [tool] = result.report.tools
    [edit] = result.report.edits
    assert rnd.repaired == -edit.saved <= tool.repaired < -5000
    assert rnd.tokens_before == rnd.tokens_after - rnd.repaired
    assert rnd.tokens_before > tool.tokens_before
    assert rnd.state == "kept"


def test_a_duplicate_beside_other_words_counts_its_own_tokens_in_its_call_s_round() -> None:
    """A message of no round holding a duplicate and the user's words: the duplicate's
    tokens go to its call's round, the words to none."""
    res = {"type": "tool_result", "tool_use_id": "a", "content": _LONG}
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}],
            },
            {"role": "user", "content": [res]},
            {"role": "user", "content": [dict(res), {"type": "text", "text": "and more"}]},
        ]
    }
    result = WIDE.apply(body, format="anthropic")
    [rnd] = result.report.rounds
    [tool] = result.report.tools
    [edit] = result.report.edits
    assert rnd.repaired == tool.repaired == -edit.saved < -5000
    assert rnd.tokens_after == rnd.tokens_before + rnd.repaired
    assert edit.saved == result.report.saved


def _two_rounds_retried(fmt: str) -> dict[str, Any]:
    """Two rounds, then one message sending both their results again (a client's retry)."""
    long, short = "alpha " * 200, "beta " * 20
    if fmt == "anthropic":

        def call(cid: str, name: str) -> dict[str, Any]:
            return {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": cid, "name": name, "input": {}}],
            }

        def res(cid: str, text: str) -> dict[str, Any]:
            return {"type": "tool_result", "tool_use_id": cid, "content": text}

        def words(role: str, text: str) -> dict[str, Any]:
            return {"role": role, "content": text}

        def results(*parts: dict[str, Any]) -> dict[str, Any]:
            return {"role": "user", "content": list(parts)}

        key, model = "messages", "assistant"
    else:

        def call(cid: str, name: str) -> dict[str, Any]:
            return {
                "role": "model",
                "parts": [{"functionCall": {"id": cid, "name": name, "args": {}}}],
            }

        def res(cid: str, text: str) -> dict[str, Any]:
            name = {"a": "fa", "b": "fb"}[cid]
            return {"functionResponse": {"id": cid, "name": name, "response": {"output": text}}}

        def words(role: str, text: str) -> dict[str, Any]:
            return {"role": role, "parts": [{"text": text}]}

        def results(*parts: dict[str, Any]) -> dict[str, Any]:
            return {"role": "user", "parts": list(parts)}

        key, model = "contents", "model"
    return {
        key: [
            words("user", "go"),
            call("a", "fa"),
            results(res("a", long)),
            call("b", "fb"),
            results(res("b", short)),
            words(model, "ok"),
            results(res("a", long), res("b", short)),
            words(model, "ok again"),
            words("user", "next"),
        ]
    }


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_duplicates_of_two_rounds_calls_in_one_message_count_each_in_its_own_round(
    fmt: str,
) -> None:
    """A message of no round holding only duplicates, of calls of two rounds, went whole to
    the first duplicate's round: it reported the other's duplicate too, and the other round
    repaired nothing, while repair's edits said otherwise. Each round's figure is now its
    edit's (the message's overhead with the first, as the edits book it)."""
    result = WIDE.apply(_two_rounds_retried(fmt), format=fmt)
    report = result.report
    saved = {e.tool: e.saved for e in report.edits}
    assert [e.step for e in report.edits] == ["repair", "repair"]
    rounds = {r.tools: r for r in report.rounds}
    assert rounds[("fa",)].repaired == -saved["fa"] < -150
    assert rounds[("fb",)].repaired == -saved["fb"] < -10
    for rnd in report.rounds:
        assert rnd.tokens_before == rnd.tokens_after - rnd.repaired
