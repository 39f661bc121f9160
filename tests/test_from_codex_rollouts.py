"""``benchmarks/from_codex_rollouts.py``: Codex CLI rollouts become valid Responses requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxwin
from tests.builders import benchmark_module


def _rollout() -> list[dict[str, object]]:
    def item(payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": "2025-09-25T08:02:05Z", "type": "response_item", "payload": payload}

    text = {"type": "input_text", "text": "Fix the bug."}
    return [
        {"type": "session_meta", "payload": {"id": "s1", "instructions": "You are Codex."}},
        item({"type": "message", "role": "user", "content": [text]}),
        {"type": "turn_context", "payload": {"cwd": "/repo"}},
        item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAA"}),
        item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_1"}),
        {"type": "event_msg", "payload": {"type": "token_count"}},
        item({"type": "function_call_output", "call_id": "call_1", "output": "ok"}),
    ]


def test_a_rollout_becomes_the_request_of_its_response_items(tmp_path: Path) -> None:
    convert = benchmark_module("from_codex_rollouts")
    src = tmp_path / "src" / "sessions"
    src.mkdir(parents=True)
    lines = [json.dumps(r) for r in _rollout()]
    (src / "rollout-2025-09-25T08-02-05-abc.jsonl").write_text("\n".join(lines) + "\n")
    (src / "rollout-broken.jsonl").write_text('{"type": "response_item"\n')
    (src / "rollout-empty.jsonl").write_text(json.dumps(_rollout()[0]) + "\n")
    (src / "notes.jsonl").write_text("not a rollout\n")
    out = tmp_path / "out"
    assert convert.main([str(tmp_path / "src"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["rollout-2025-09-25T08-02-05-abc.json"]
    body = json.loads((out / "rollout-2025-09-25T08-02-05-abc.json").read_text())
    types = [i["type"] for i in body["input"]]
    assert types == ["message", "reasoning", "function_call", "function_call_output"]
    assert ctxwin.check(body) == []


def test_a_line_that_is_not_json_is_named() -> None:
    convert = benchmark_module("from_codex_rollouts")
    with pytest.raises(ValueError, match="line 2"):
        convert.request_of(['{"type": "session_meta"}', "{oops"])


def test_a_compaction_starts_a_new_context_and_running_calls_are_left_off() -> None:
    convert = benchmark_module("from_codex_rollouts")
    before = [json.dumps(r) for r in _rollout()]
    summary = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "…"}]}
    compacted = {"type": "compacted", "payload": {"replacement_history": [summary]}}
    running = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_2"}
    after = [compacted, {"type": "response_item", "payload": running}]
    contexts = convert.contexts_of([*before, *(json.dumps(r) for r in after)])
    assert [len(c) for c in contexts] == [4, 1]  # the call still running is not sent
    assert convert.request_of([*before, json.dumps(compacted)]) == {"input": [summary]}


def test_an_older_rollout_of_bare_items_is_read() -> None:
    convert = benchmark_module("from_codex_rollouts")
    items = [r["payload"] for r in _rollout() if r["type"] == "response_item"]
    lines = [json.dumps({"id": "s1", "instructions": None}), json.dumps({"record_type": "state"})]
    body = convert.request_of([*lines, *(json.dumps(i) for i in items)])
    assert body == {"input": items}
    assert ctxwin.check(body) == []
