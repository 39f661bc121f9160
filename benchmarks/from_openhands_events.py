"""Turn OpenHands event streams into OpenAI Chat request bodies.

Usage: python benchmarks/from_openhands_events.py SRC OUT

Each event stream under SRC (``agent-logs/*.json``, searched recursively: a JSON list of
events, as Terminal-Bench's leaderboard keeps OpenHands runs) becomes ``OUT/<run>.json``,
named after the folder above ``agent-logs``: the request the agent sent last, rebuilt as
OpenHands' conversation memory builds it. The system event becomes the system message, the
user's messages user messages; the actions of one model response (``tool_call_metadata``)
become one assistant message with that response's content and tool calls, each observation
a tool message with its content as OpenHands sends it: a command's output with the lines it
adds from the recorded metadata (prefix, suffix, working directory, interpreter, exit
code), and every observation cut to its middle past ``MAX_MESSAGE_CHARS`` characters, as
OpenHands' conversation memory does (``truncate_content``; the logs record outputs whole).
Left out: recall events (workspace context) and the closing assistant turn (the ``finish``
call answers the last request). A call whose observation never came ends the request before
its turn. Replay the folder with ``python benchmarks/cost_window.py --traces OUT``.

The figures in ``benchmarks/README.md`` (stop 31) use the 65 runs of OpenHands with Claude 4
Sonnet in laude-institute/terminal-bench-leaderboard (``results/terminal-bench-core:0.1.1/
20250711_openhands_claude-4-sonnet/``); they are not bundled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _convert import convert_all

__all__ = ["MAX_MESSAGE_CHARS", "main", "request_of"]

MAX_MESSAGE_CHARS = 30_000
"""OpenHands' default ``max_message_chars``: an observation longer than this is sent as its
first and last halves of it around a marker. Checked against the provider's own counts of the
runs' requests with ``benchmarks/real_bills.py``."""

_CUT = "\n[... Observation truncated due to length ...]\n"


def _text(event: dict[str, Any]) -> str:
    args = event.get("args")
    content = args.get("content") if isinstance(args, dict) else None
    return str(content or event.get("message") or "")


def _turn(response: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of a recorded model response."""
    message = response["choices"][0]["message"]
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
        }
        for c in message.get("tool_calls") or []
    ]
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if calls:
        out["tool_calls"] = calls
    return out


def _messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    responses: set[str] = set()
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            raise ValueError(f"event {n}: not an object")
        action, meta = event.get("action"), event.get("tool_call_metadata")
        if action == "system":
            messages.append({"role": "system", "content": _text(event)})
        elif action == "message" and not meta:
            role = "user" if event.get("source") == "user" else "assistant"
            messages.append({"role": role, "content": _text(event)})
        elif action and meta:
            response = meta["model_response"]
            if response["id"] not in responses:  # one message per response, all its calls
                responses.add(response["id"])
                messages.append(_turn(response))
        elif event.get("observation") and meta:
            tool = {"role": "tool", "tool_call_id": meta["tool_call_id"]}
            messages.append({**tool, "content": _observation(event)})
    return messages


def _observation(event: dict[str, Any]) -> str:
    """An observation's text as OpenHands sends it (see the module)."""
    text = str(event.get("content") or "")
    extras = event.get("extras")
    meta = extras.get("metadata") if isinstance(extras, dict) else None
    if event.get("observation") == "run" and isinstance(meta, dict):
        text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
    if len(text) > MAX_MESSAGE_CHARS:
        half = MAX_MESSAGE_CHARS // 2
        text = text[:half] + _CUT + text[-half:]
    return text


def _answered(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages up to the first turn a call of which has no result, without the
    closing assistant turns."""
    for i, msg in enumerate(messages):
        calls = {c["id"] for c in msg.get("tool_calls", [])}
        results = set()
        for later in messages[i + 1 :]:
            if later["role"] != "tool":
                break
            results.add(later["tool_call_id"])
        if calls - results:
            messages = messages[:i]
            break
    while messages and messages[-1]["role"] == "assistant":
        messages = messages[:-1]
    return messages


def request_of(events: Any) -> dict[str, Any]:
    """The request an OpenHands event stream makes up (a ValueError for a stream that is not
    a list of events, or leaves no request)."""
    if not isinstance(events, list):
        raise ValueError("not a list of events")
    messages = _answered(_messages(events))
    if not any(m["role"] == "tool" for m in messages):
        raise ValueError("no tool result")
    return {"messages": messages}


def _name(path: Path) -> str:
    run = path.parent.parent.name if path.parent.name == "agent-logs" else path.stem
    return f"{run}.json"


def main(argv: list[str] | None = None) -> int:
    return convert_all(
        argv,
        __doc__.splitlines()[2],
        "agent-logs/*.json",
        lambda path: request_of(json.loads(path.read_text(encoding="utf-8"))),
        _name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
