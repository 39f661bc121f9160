"""``benchmarks/from_openhands_events.py``: OpenHands event streams become valid Chat requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from tests.builders import benchmark_module


def _response(rid: str, content: str, *calls: str) -> dict[str, Any]:
    tool_calls = [
        {"id": c, "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}
        for c in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"id": rid, "model": "claude-sonnet-4", "choices": [{"message": message}]}


def _action(response: dict[str, Any], call: str) -> dict[str, Any]:
    meta = {"tool_call_id": call, "model_response": response}
    return {"source": "agent", "action": "run", "tool_call_metadata": meta, "args": {}}


def _observation(response: dict[str, Any], call: str, output: str) -> dict[str, Any]:
    meta = {"tool_call_id": call, "model_response": response}
    return {"source": "agent", "observation": "run", "tool_call_metadata": meta, "content": output}


def _events(*, unanswered: bool = False) -> list[dict[str, Any]]:
    both = _response("r1", "Two commands at once.", "t1", "t2")
    one = _response("r2", "", "t3")
    done = _response("r3", "Done.", "t4")
    events = [
        {"source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
        {"source": "user", "action": "message", "args": {"content": "Fix the build."}},
        {"source": "user", "action": "recall", "args": {"query": "Fix the build."}},
        {"source": "environment", "observation": "recall", "content": "workspace"},
        _action(both, "t1"),
        _observation(both, "t1", "ok"),
        _action(both, "t2"),
        _observation(both, "t2", "built"),
        _action(one, "t3"),
        _observation(one, "t3", "tests pass"),
    ]
    if unanswered:
        late = _response("r4", "", "t5")
        return [*events, _action(late, "t5")]
    return [*events, {**_action(done, "t4"), "action": "finish"}]


def test_an_event_stream_becomes_the_request_its_agent_sent_last(tmp_path: Path) -> None:
    convert = benchmark_module("from_openhands_events")
    logs = tmp_path / "src" / "fix-build.1-of-1" / "agent-logs"
    logs.mkdir(parents=True)
    (logs / "a1.json").write_text(json.dumps(_events()))
    (logs / "broken.json").write_text("[{")
    (tmp_path / "src" / "fix-build.1-of-1" / "results.json").write_text("{}")
    out = tmp_path / "out"
    assert convert.main([str(tmp_path / "src"), str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["fix-build.1-of-1.json"]
    body = json.loads((out / "fix-build.1-of-1.json").read_text())
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    first = body["messages"][2]
    assert [c["id"] for c in first["tool_calls"]] == ["t1", "t2"]  # one message per response
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "t3", "content": "tests pass"}
    assert ctxwin.check(body) == []


def test_a_call_without_its_observation_ends_the_request_before_its_turn() -> None:
    convert = benchmark_module("from_openhands_events")
    body = convert.request_of(_events(unanswered=True))
    assert body["messages"][-1]["tool_call_id"] == "t3"
    assert ctxwin.check(body) == []


def test_a_stream_that_is_not_a_list_of_events_is_refused() -> None:
    convert = benchmark_module("from_openhands_events")
    with pytest.raises(ValueError, match="not a list"):
        convert.request_of({"events": []})
    with pytest.raises(ValueError, match="event 0"):
        convert.request_of(["run"])
    with pytest.raises(ValueError, match="no tool result"):
        convert.request_of(_events()[:2])


def test_a_command_output_is_sent_as_openhands_renders_and_cuts_it() -> None:
    """The recorded output gets the lines OpenHands adds from its metadata, and one longer
    than ``max_message_chars`` keeps its first and last halves around OpenHands' marker."""
    convert = benchmark_module("from_openhands_events")
    events = _events()
    metadata = {"exit_code": 1, "working_dir": "/app", "py_interpreter_path": "", "suffix": "!"}
    events[5] = {**events[5], "extras": {"metadata": metadata}}
    long = "a" * 20_000 + "b" * 20_000
    events[9] = {**events[9], "content": long}  # no metadata: cut only
    messages = convert.request_of(events)["messages"]
    assert messages[3]["content"] == (
        "ok!\n[Current working directory: /app]\n[Command finished with exit code 1]"
    )
    cut = messages[-1]["content"]
    half = convert.MAX_MESSAGE_CHARS // 2
    assert cut == "a" * half + "\n[... Observation truncated due to length ...]\n" + "b" * half
