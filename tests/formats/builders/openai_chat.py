"""Scripts as OpenAI Chat Completions bodies."""

from __future__ import annotations

import json
from typing import Any

from tests.strategies import Script

FORMAT = "openai-chat"
CONTAINER = "messages"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def build(script: Script) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for turn in script:
        if turn.kind == "user":
            messages.append(user(turn.text))
        elif turn.kind == "assistant":
            messages.append({"role": "assistant", "content": turn.text})
        else:
            messages.append(
                {
                    "role": "assistant",
                    "content": turn.text or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.args)},
                        }
                        for c in turn.calls
                    ],
                }
            )
            for i, content, _ in turn.results:
                messages.append(
                    {"role": "tool", "tool_call_id": turn.calls[i].id, "content": content}
                )
    return {"model": "gpt-4o", "messages": messages}
