"""Synthetic agent histories for benchmarks (deterministic; no corpora needed)."""

from __future__ import annotations

import json
import random
from typing import Any


def coding_history(rounds: int, *, seed: int = 7, result_chars: int = 1100) -> list[dict[str, Any]]:
    """An OpenAI-chat coding-agent history: each round one or two shell/read calls with
    results of a few hundred tokens, and short assistant texts in between."""
    rng = random.Random(seed)
    words = "def class return import self value file path error test line config data".split()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " * 40},
        {"role": "user", "content": "Fix the failing test in the repository."},
    ]
    for r in range(rounds):
        n = 1 if rng.random() < 0.7 else 2
        calls = []
        for j in range(n):
            tool = rng.choice(["shell", "read_file", "grep"])
            calls.append(
                {
                    "id": f"call_{r}_{j}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps({"cmd": f"cat src/m{r}.py"})},
                }
            )
        messages.append({"role": "assistant", "content": f"Step {r}: looking further.", "tool_calls": calls})
        for c in calls:
            body = " ".join(rng.choice(words) for _ in range(result_chars // 6))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": body})
    return messages


def rounds_of(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes at which a request is made (before each assistant message)."""
    return [i for i, m in enumerate(messages) if m["role"] == "assistant"]
