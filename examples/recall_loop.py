"""Recall end to end, offline: the window clears a file the agent read, and the agent later
gets lines 10-20 of it back, exactly, through the ``recall`` tool.

The fake model reads four files, then looks for the handle in the first file's
placeholder (``[read_file result cleared (...). recall("r-...") returns it.]``) and calls
``recall`` with it. The loop answers with ``policy.recall_result`` (a ``tool`` message in
OpenAI Chat; the other formats have theirs), and the next request carries the lines.

Run:  python examples/recall_loop.py

Originals live in the policy's store: ``store: memory`` here; ``sqlite:///path.db`` or
``redis://host:port/db`` share them between processes and machines.
"""

from __future__ import annotations

import json
import re
from typing import Any

import ctxwin

POLICY = {
    "context_window": 8_000,
    "recall": True,
    "window": {"keep_rounds": 1, "trigger": 0.5, "target": 0.3},
}
HANDLE = re.compile(r'recall\("(r-[0-9a-f]{16})"\)')


def read_file(path: str) -> str:
    return "\n".join(f"{i:4d}  {path}: setting_{i} = {i * 7}" for i in range(1, 120))


def fake_model(request: dict[str, Any], turn: int) -> dict[str, Any]:
    """Read four files, then recall lines 10-20 of the first, then answer."""
    files = ["src/app.py", "src/db.py", "src/api.py", "src/jobs.py"]
    if turn < len(files):
        call = {"name": "read_file", "arguments": json.dumps({"path": files[turn]})}
    elif turn == len(files):
        first = next(m for m in request["messages"] if m.get("tool_call_id") == "call_0")
        found = HANDLE.search(first["content"])
        assert found, f"the first read should have been cleared, with a handle: {first}"
        call = {
            "name": "recall",
            "arguments": json.dumps({"handle": found.group(1), "lines": "10-20"}),
        }
    else:
        return {"role": "assistant", "content": "setting_10 is 70 and setting_20 is 140."}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{turn}", "type": "function", "function": call}],
    }


def main() -> None:
    policy = ctxwin.load_policy(POLICY)
    tools = [
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
        policy.recall_tool("openai-chat"),
    ]
    history: list[dict[str, Any]] = [{"role": "user", "content": "What are settings 10-20?"}]
    for turn in range(10):
        result = policy.apply({"messages": history, "tools": tools})
        request = result.request
        assert isinstance(request, dict)
        reply = fake_model(request, turn)
        history.append(reply)
        cleared = sum(1 for e in result.report.edits if e.step == "window")
        print(f"turn {turn}: {result.tokens:,} tokens sent, {cleared} results cleared")
        if not reply.get("tool_calls"):
            print(f"answer: {reply['content']}")
            break
        for call in reply["tool_calls"]:
            fn = call["function"]
            if fn["name"] == "recall":
                answer = policy.recall_result(call["id"], fn["arguments"], "openai-chat")
                print(f"recall {fn['arguments']} ->")
                print(answer["content"], end="")
                history.append(answer)
            else:
                path = json.loads(fn["arguments"])["path"]
                history.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": read_file(path)}
                )


if __name__ == "__main__":
    main()
