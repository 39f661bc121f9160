"""Scripts as Gemini generateContent bodies.

The style of a body is drawn from its script (so hypothesis varies and shrinks it): camelCase
or snake_case field names, and calls with or without ids. Without ids, results pair with
their calls by order and name.
"""

from __future__ import annotations

from typing import Any

from tests.strategies import Script

FORMAT = "gemini"
CONTAINER = "contents"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def style(script: Script) -> tuple[bool, bool]:
    """(snake_case, with ids), read off the first user text."""
    seed = sum(map(ord, script[0].text))
    return seed % 2 == 1, (seed // 2) % 3 != 0


def build(script: Script) -> dict[str, Any]:
    snake, with_ids = style(script)
    call_key, response_key = (
        ("function_call", "function_response") if snake else ("functionCall", "functionResponse")
    )
    contents: list[dict[str, Any]] = []
    for turn in script:
        if turn.kind == "user":
            contents.append(user(turn.text))
        elif turn.kind == "assistant":
            contents.append({"role": "model", "parts": [{"text": turn.text}]})
        else:
            parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
            for k, c in enumerate(turn.calls):
                fc: dict[str, Any] = {"id": c.id} if with_ids else {}
                fc.update(name=c.name, args=c.args)
                part: dict[str, Any] = {call_key: fc}
                if k == 0:
                    part["thought_signature" if snake else "thoughtSignature"] = "c2lnbmF0dXJl"
                parts.append(part)
            contents.append({"role": "model", "parts": parts})
            responses = []
            for i, content, is_error in turn.results:
                c = turn.calls[i]
                fr: dict[str, Any] = {"id": c.id} if with_ids else {}
                key = "error" if is_error else ("output", "result")[len(content) % 2]
                fr.update(name=c.name, response={key: content})
                responses.append({response_key: fr})
            contents.append({"role": "user", "parts": responses})
    instruction = {"parts": [{"text": "You help."}]}
    if snake:
        return {"system_instruction": instruction, "contents": contents, "tool_config": {}}
    return {"systemInstruction": instruction, "contents": contents, "toolConfig": {}}
