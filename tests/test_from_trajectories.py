"""``benchmarks/from_trajectories.py``: mini-swe-agent trajectories become valid requests."""

from __future__ import annotations

import json
from pathlib import Path

import ctxwin
from tests.builders import benchmark_module


def _trajectory() -> dict[str, object]:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
            {"role": "assistant", "content": None, "tool_calls": [call], "extra": {"x": 1}},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok", "extra": {}},
            {"role": "assistant", "content": "done", "tool_calls": []},
            {"role": "exit", "content": "Submitted"},
        ],
    }


def test_a_trajectory_becomes_its_last_request(tmp_path: Path) -> None:
    convert = benchmark_module("from_trajectories")
    src = tmp_path / "src" / "run_a" / "repo__repo-1"
    src.mkdir(parents=True)
    (src / "repo__repo-1.traj.json").write_text(json.dumps(_trajectory()), encoding="utf-8")
    (src / "broken.traj.json").write_text("{", encoding="utf-8")
    out = tmp_path / "out"
    assert convert.main([str(tmp_path / "src"), str(out)]) == 0
    body = json.loads((out / "run_a__repo__repo-1.json").read_text(encoding="utf-8"))
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][1]["content"] == "Fix the bug."
    assert "extra" not in body["messages"][2]
    assert body["tools"][0]["function"]["name"] == "bash"
    assert ctxwin.check(body) == []
    assert sorted(p.name for p in out.iterdir()) == ["run_a__repo__repo-1.json"]
