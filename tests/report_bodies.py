"""Small hand-made request bodies for the report and command-line tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

SMALL_POLICY: dict[str, Any] = {"context_window": 4000, "tools": {"*": {"max_tokens": 50}}}
"""Every tool result capped at 50 tokens, in a 4,000-token window."""

SMALL_POLICY_YAML = 'context_window: 4000\ntools:\n  "*":\n    max_tokens: 50\n'


def long_output(lines: int, tag: str = "line") -> str:
    return "\n".join(
        f"{tag} {i}: FAILED test_case_{i} - AssertionError: {i * 7} != {i}" for i in range(lines)
    )


def chat(
    rounds: Sequence[Sequence[tuple[str, str]]],
    *,
    final: str | None = "Done.",
    missing: Sequence[str] = (),
) -> dict[str, Any]:
    """An OpenAI-chat body: a system prompt, a user turn, then per round one assistant turn
    calling each ``(tool, result)`` of the round and its results; ``missing`` lists call ids
    whose results are left out (a pairing problem)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    n = 0
    for calls in rounds:
        ids = [f"call_{n + i + 1}" for i in range(len(calls))]
        n += len(calls)
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps({"n": cid})},
                    }
                    for cid, (tool, _) in zip(ids, calls, strict=True)
                ],
            }
        )
        for cid, (_, result) in zip(ids, calls, strict=True):
            if cid not in missing:
                messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    if final is not None:
        messages.append({"role": "assistant", "content": final})
    return {"model": "gpt-4o", "messages": messages}


def coding_body() -> dict[str, Any]:
    """Two rounds: ``bash`` and ``read_file`` with long results, then a short ``bash``."""
    return chat(
        [
            [("bash", long_output(200)), ("read_file", "def f():\n    return 1\n" * 100)],
            [("bash", "a.py b.py")],
        ]
    )
