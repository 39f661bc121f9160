"""``benchmarks/from_claude_sessions.py``: Claude Code logs become valid Anthropic requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from tests.builders import benchmark_module


def _record(
    uuid: str, parent: str | None, role: str, content: Any, mid: str = ""
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    if mid:
        message["id"] = mid
    return {"type": role, "uuid": uuid, "parentUuid": parent, "message": message}


def _log() -> list[dict[str, Any]]:
    """A session with two parallel calls (Claude Code writes one record per block, and the
    first call's result hangs off its own record, off the chain), then a compaction."""
    use = {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}
    return [
        {"type": "summary", "summary": "Listing files", "leafUuid": "a4"},
        _record("u1", None, "user", "List the files."),
        _record("a1", "u1", "assistant", [{"type": "text", "text": "Two at once."}], "m1"),
        _record("a2", "a1", "assistant", [{**use, "id": "t1"}], "m1"),
        _record("r1", "a2", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]),
        _record("a3", "a2", "assistant", [{**use, "id": "t2"}], "m1"),
        _record("r2", "a3", "user", [{"type": "tool_result", "tool_use_id": "t2", "content": "b"}]),
        _record("a4", "r2", "assistant", [{"type": "thinking", "thinking": "no signature"}], "m2"),
        _record("a5", "a4", "assistant", [{"type": "text", "text": "Files a and b."}], "m2"),
        {"type": "system", "subtype": "compact_boundary", "uuid": "s1", "parentUuid": None},
        _record("u2", "s1", "user", "Summary: files a and b. Now count them."),
        _record("a6", "u2", "assistant", [{**use, "id": "t3"}], "m3"),
        _record("r3", "a6", "user", [{"type": "tool_result", "tool_use_id": "t3", "content": "2"}]),
    ]


def test_a_log_becomes_one_request_per_conversation(tmp_path: Path) -> None:
    convert = benchmark_module("from_claude_sessions")
    src = tmp_path / "src" / "project"
    src.mkdir(parents=True)
    (src / "s1.jsonl").write_text("\n".join(json.dumps(r) for r in _log()) + "\n")
    (src / "broken.jsonl").write_text('{"type": "user"\n')
    out = tmp_path / "out"
    assert convert.main([str(tmp_path / "src"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["s1__seg0.json", "s1__seg1.json"]
    first = json.loads((out / "s1__seg0.json").read_text())
    roles = [m["role"] for m in first["messages"]]
    assert roles == ["user", "assistant", "user"]  # the closing answer is not in the request
    turn = first["messages"][1]["content"]
    assert [b["type"] for b in turn] == ["text", "tool_use", "tool_use"]  # one API message
    results = first["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"]  # the off-chain result too
    second = json.loads((out / "s1__seg1.json").read_text())
    assert second["messages"][0]["content"][0]["text"].startswith("Summary")
    for body in (first, second):
        assert ctxwin.check(body, format="anthropic") == []


def test_a_log_without_parents_is_read_in_order_and_a_call_without_result_ends_it() -> None:
    convert = benchmark_module("from_claude_sessions")
    late = _record("a9", None, "assistant", [{"type": "tool_use", "id": "t9", "name": "Bash"}])
    records = [{k: v for k, v in r.items() if k != "parentUuid"} for r in [*_log()[1:9], late]]
    lines = [json.dumps(r) for r in records]
    [(name, body)] = convert.bodies_of(lines, "stream")
    assert name == "stream.json"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert ctxwin.check(body, format="anthropic") == []


def test_a_line_that_is_not_json_is_named() -> None:
    convert = benchmark_module("from_claude_sessions")
    with pytest.raises(ValueError, match="line 2"):
        convert.bodies_of([json.dumps(_log()[1]), "{oops"], "s")
    with pytest.raises(ValueError, match="no request"):
        convert.bodies_of([json.dumps(_log()[1])], "s")
