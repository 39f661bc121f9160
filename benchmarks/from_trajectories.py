"""Turn mini-swe-agent trajectories (``*.traj.json``) into OpenAI Chat request bodies.

Usage: python benchmarks/from_trajectories.py SRC OUT

Each trajectory under SRC (searched recursively) becomes ``OUT/<folder>__<name>.json``: the
request the agent sent last (every message up to its last tool result), with the ``bash``
tool declared. Only what a provider reads is kept (role, content, tool calls, tool call
ids); mini-swe-agent's ``extra`` fields and its closing ``exit`` message are left out.
Replay the folder with ``python benchmarks/cost_window.py --traces OUT``.

Trajectories of mini-swe-agent runs are published in its repository's history
(``output/*/*/*.traj.json``, e.g. DeepSeek on SWE-bench); they are not bundled here.
"""

from __future__ import annotations

import json
from typing import Any

from _convert import convert_all

__all__ = ["main", "request_of"]

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def request_of(trajectory: dict[str, Any]) -> dict[str, Any]:
    """The last request of a trajectory, as an OpenAI Chat body."""
    messages: list[dict[str, Any]] = []
    for m in trajectory["messages"]:
        role = m["role"]
        if role not in ("system", "user", "assistant", "tool"):
            continue  # mini-swe-agent's closing "exit" message
        out: dict[str, Any] = {"role": role, "content": _text(m.get("content"))}
        if role == "assistant" and m.get("tool_calls"):
            out["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    },
                }
                for c in m["tool_calls"]
            ]
        if role == "tool":
            out["tool_call_id"] = m["tool_call_id"]
        messages.append(out)
    while messages and messages[-1]["role"] == "assistant":
        messages.pop()  # the answer to the last request is not part of it
    return {"model": "deepseek-chat", "messages": messages, "tools": [BASH]}


def main(argv: list[str] | None = None) -> int:
    return convert_all(
        argv,
        __doc__.splitlines()[2],
        "*.traj.json",
        lambda path: request_of(json.loads(path.read_text(encoding="utf-8"))),
        lambda path: f"{path.parent.parent.name}__{path.name.removesuffix('.traj.json')}.json",
    )


if __name__ == "__main__":
    raise SystemExit(main())
