"""Scripts as Anthropic Messages bodies.

Shapes vary with the position in the script so generated bodies hold what real ones do:
string and block-list content, thinking blocks with signatures, ``cache_control``, results
with string or list content, ``is_error`` present or not, and a user's next words sent in the
message that carries the results, after them (as Claude Code does).
"""

from __future__ import annotations

from typing import Any

from tests.strategies import Script

FORMAT = "anthropic"
CONTAINER = "messages"
UNIQUE_IDS = True
"""The API refuses a ``tool_use`` id repeated anywhere in the request: valid bodies reuse none."""


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def build(script: Script) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    merged = False
    for t, turn in enumerate(script):
        if merged:
            merged = False
            continue
        if turn.kind == "user":
            messages.append(user(turn.text))
        elif turn.kind == "assistant":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": turn.text}]})
        else:
            blocks: list[dict[str, Any]] = []
            if t % 2:
                blocks.append({"type": "thinking", "thinking": "plan", "signature": f"sig{t}"})
            if turn.text:
                blocks.append({"type": "text", "text": turn.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
                for c in turn.calls
            ]
            messages.append({"role": "assistant", "content": blocks})
            results: list[dict[str, Any]] = []
            for k, (i, content, is_error) in enumerate(turn.results):
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": turn.calls[i].id}
                result["content"] = content if k % 2 else [{"type": "text", "text": content}]
                if is_error or k % 2:
                    result["is_error"] = is_error
                if k == len(turn.results) - 1 and t % 3 == 0:
                    result["cache_control"] = {"type": "ephemeral"}
                results.append(result)
            after = script[t + 1] if t + 1 < len(script) else None
            if after is not None and after.kind == "user" and t % 4 == 1:
                results.append({"type": "text", "text": after.text})
                merged = True
            messages.append({"role": "user", "content": results})
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You help.",
        "messages": messages,
    }
