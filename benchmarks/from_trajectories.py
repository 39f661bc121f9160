"""Turn mini-swe-agent trajectories (``*.traj.json``) into OpenAI Chat request bodies.

Usage: python benchmarks/from_trajectories.py [--text-actions] SRC OUT

Each trajectory under SRC (searched recursively) becomes ``OUT/<folder>__<name>.json``: the
request the agent sent last (every message up to its last tool result), with the ``bash``
tool declared. Only what a provider reads is kept (role, content, tool calls, tool call
ids); mini-swe-agent's ``extra`` fields and its closing ``exit`` message are left out.
Replay the folder with ``python benchmarks/cost_window.py --traces OUT``.

``--text-actions`` reads the older mini-swe-agent, which had no tool calls: its model wrote
one ``bash`` code block a turn, and the command's output came back as a user message. Each
turn with exactly one block becomes the turn of a tool-calling agent (its text, less the
block, as content, and one ``bash`` call with the command), and the user message after it
that call's result; a turn without one (mini-swe-agent answered it with a format error) stays
as it was. The tokens are the run's, the structure the one its tool-calling version sends.

Trajectories of mini-swe-agent runs are published in its repository's history
(``output/*/*/*.traj.json``, e.g. DeepSeek on SWE-bench); they are not bundled here.
"""

from __future__ import annotations

import json
import re
import sys
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


_ACTION = re.compile(r"```bash[ \t]*\n(.*?)\n?```", re.DOTALL)


def _as_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text actions as tool calls (see ``--text-actions``)."""
    out: list[dict[str, Any]] = []
    pending = None
    for msg in messages:
        role, content = msg["role"], msg["content"]
        text_turn = role == "assistant" and not msg.get("tool_calls")
        actions = _ACTION.findall(content) if text_turn else []
        if len(actions) == 1:
            pending = f"call_{len(out)}"
            function = {"name": "bash", "arguments": json.dumps({"command": actions[0]})}
            call = {"id": pending, "type": "function", "function": function}
            out.append(
                {"role": role, "content": _ACTION.sub("", content).strip(), "tool_calls": [call]}
            )
            continue
        if role == "user" and pending is not None:
            out.append({"role": "tool", "tool_call_id": pending, "content": content})
        else:
            out.append(msg)
        pending = None
    return out


def request_of(trajectory: dict[str, Any], *, text_actions: bool = False) -> dict[str, Any]:
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
    if text_actions:
        messages = _as_calls(messages)
    while messages and messages[-1]["role"] == "assistant":
        messages.pop()  # the answer to the last request is not part of it
    return {"model": "deepseek-chat", "messages": messages, "tools": [BASH]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = "--text-actions" in args
    return convert_all(
        [a for a in args if a != "--text-actions"],
        __doc__.splitlines()[2],
        "*.traj.json",
        lambda path: request_of(json.loads(path.read_text(encoding="utf-8")), text_actions=text),
        lambda path: f"{path.parent.parent.name}__{path.name.removesuffix('.traj.json')}.json",
    )


if __name__ == "__main__":
    raise SystemExit(main())
