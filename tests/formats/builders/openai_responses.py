"""Scripts as OpenAI Responses bodies.

Variety the adapter must carry: short-form user messages, assistant ``message`` items with
``output_text`` parts (every other one after a reasoning item), a reasoning item before each
round that has text, ``custom_tool_call``
items for the ``shell`` tool, and outputs as strings or as lists of ``input_text`` parts.
"""

from __future__ import annotations

import json
from typing import Any

from tests.strategies import Script

FORMAT = "openai-responses"
CONTAINER = "input"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def build(script: Script) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for n, turn in enumerate(script):
        if turn.kind == "user":
            items.append(user(turn.text))
        elif turn.kind == "assistant":
            if n % 2 == 0:  # an answer with its reasoning (no item id: not tied to it)
                items.append({"type": "reasoning", "summary": [], "encrypted_content": f"gA{n}"})
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.text}],
                }
            )
        else:
            if turn.text:
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{n}",
                        "summary": [{"type": "summary_text", "text": turn.text}],
                        "encrypted_content": f"gAAAA{n}",
                    }
                )
            custom = {c.id for c in turn.calls if c.name == "shell"}
            for c in turn.calls:
                if c.id in custom:
                    items.append(
                        {
                            "type": "custom_tool_call",
                            "call_id": c.id,
                            "name": c.name,
                            "input": c.args["q"],
                        }
                    )
                else:
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": c.id,
                            "name": c.name,
                            "arguments": json.dumps(c.args),
                        }
                    )
            for i, content, as_list in turn.results:
                cid = turn.calls[i].id
                output: object = [{"type": "input_text", "text": content}] if as_list else content
                kind = "custom_tool_call_output" if cid in custom else "function_call_output"
                items.append({"type": kind, "call_id": cid, "output": output})
    return {"model": "gpt-5", "instructions": "You help.", "input": items}
