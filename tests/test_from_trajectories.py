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


def test_text_actions_become_tool_calls(tmp_path: Path) -> None:
    """The older mini-swe-agent wrote its command in a ``bash`` block and got the output
    back as a user message: ``--text-actions`` sends them as a tool call and its result."""
    convert = benchmark_module("from_trajectories")
    act = "THOUGHT: look.\n\n```bash\nls -la\n```"
    trajectory = {
        "messages": [
            {"role": "system", "content": "Reply with one bash block."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": act},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>a b</output>"},
            {"role": "assistant", "content": "No block here."},
            {"role": "user", "content": "Format error: one bash block, please."},
            {"role": "assistant", "content": "```bash\ncat a\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>x</output>"},
            {"role": "assistant", "content": "```bash\necho COMPLETE\n```"},
        ]
    }
    src = tmp_path / "src" / "run_t" / "repo-2"
    src.mkdir(parents=True)
    (src / "repo-2.traj.json").write_text(json.dumps(trajectory), encoding="utf-8")
    out = tmp_path / "out"
    assert convert.main(["--text-actions", str(tmp_path / "src"), str(out)]) == 0
    body = json.loads((out / "run_t__repo-2.json").read_text(encoding="utf-8"))
    roles = [m["role"] for m in body["messages"]]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    first = body["messages"][2]
    assert first["content"] == "THOUGHT: look."
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"command": "ls -la"}
    assert body["messages"][3]["tool_call_id"] == first["tool_calls"][0]["id"]
    assert ctxwin.check(body) == []
    plain = convert.request_of(trajectory)  # without the flag, as it was
    assert not any(m.get("tool_calls") for m in plain["messages"])
