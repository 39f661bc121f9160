"""Synthetic agent histories for benchmarks (deterministic; no corpora needed).

Also sets ``sys.path`` so that ``python benchmarks/<script>.py`` imports the ``ctxwin`` of
this checkout when it is not installed.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

Content = Literal["words", "code"]

_WORDS_TEXT = "def class return import self value file path error test line config data"
_SYLLABLES_TEXT = (
    "get set load parse item user order conf path node tree buf ctx req resp err val idx "
    "key map list str num tmp out src dst init run step calc read write sync lock pool"
)
_WORDS = _WORDS_TEXT.split()
_SYLLABLES = _SYLLABLES_TEXT.split()
_KEYWORDS = ("def", "return", "if", "for", "while", "assert", "raise", "yield", "import")


def _ident(rng: random.Random) -> str:
    parts = [rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))]
    return "_".join(parts) if rng.random() < 0.7 else "".join(p.title() for p in parts)


def _code_line(rng: random.Random, r: int) -> str:
    """One line of code-like tool output: identifiers, numbers, paths, punctuation."""
    indent = " " * (4 * rng.randint(0, 3))
    kind = rng.random()
    if kind < 0.35:
        return f"{indent}{_ident(rng)} = {_ident(rng)}({_ident(rng)}, {rng.randint(0, 9999)})"
    if kind < 0.55:
        args = ", ".join(_ident(rng) for _ in range(rng.randint(0, 4)))
        return f"{indent}{rng.choice(_KEYWORDS)} {_ident(rng)}({args}):"
    if kind < 0.7:
        return f"src/{_ident(rng)}/{_ident(rng)}.py:{rng.randint(1, 2000)}: {_ident(rng)}"
    if kind < 0.85:
        return f"{indent}# {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10)))}"
    value = rng.random() * 10 ** rng.randint(0, 6)
    return f'{indent}"{_ident(rng)}": {value:.3f},  # r{r}'


def _text(rng: random.Random, chars: int, content: Content, r: int) -> str:
    if content == "words":
        return " ".join(rng.choice(_WORDS) for _ in range(chars // 6))
    lines: list[str] = []
    n = 0
    while n < chars:
        line = _code_line(rng, r)
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


def coding_history(
    rounds: int, *, seed: int = 7, result_chars: int = 1100, content: Content = "words"
) -> list[dict[str, Any]]:
    """An OpenAI-chat coding-agent history: each round one or two shell/read calls with
    results of about ``result_chars`` characters, and short assistant texts in between.

    ``content="words"`` fills results with words from a 14-word vocabulary (very regular
    for a tokenizer); ``content="code"`` with code-like lines (identifiers, numbers, paths),
    closer to what shell and file tools return.
    """
    rng = random.Random(seed)
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
                    "function": {
                        "name": tool,
                        "arguments": json.dumps({"cmd": f"cat src/m{r}.py"}),
                    },
                }
            )
        messages.append(
            {"role": "assistant", "content": f"Step {r}: looking further.", "tool_calls": calls}
        )
        for c in calls:
            body = _text(rng, result_chars, content, r)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": body})
    return messages


def rounds_of(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes at which a request is made (before each assistant message)."""
    return [i for i, m in enumerate(messages) if m["role"] == "assistant"]


def request_points(messages: list[dict[str, Any]]) -> list[int]:
    """Prefix lengths an agent sends: ``messages[:t]`` before each model turn, and the whole."""
    return [*rounds_of(messages)[1:], len(messages)]


def all_text(messages: list[dict[str, Any]]) -> str:
    """Every text of an OpenAI-chat history joined (contents, tool names and arguments)."""
    parts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        for c in m.get("tool_calls") or ():
            parts.append(c["function"]["name"])
            parts.append(c["function"]["arguments"])
    return "\n".join(parts)


def cut_to_tokens(messages: list[dict[str, Any]], tokens: int) -> list[dict[str, Any]]:
    """The request (a prefix ``messages[:t]`` an agent sends) closest to ``tokens`` tokens,
    counted as ctxwin counts a request (o200k_base, message overheads)."""
    import ctxwin

    policy = ctxwin.Policy(format="openai-chat")
    best = 0
    best_gap = None
    for t in request_points(messages):
        n = policy.apply({"messages": messages[:t]}).report.tokens_before
        gap = abs(n - tokens)
        if best_gap is None or gap < best_gap:
            best, best_gap = t, gap
        if n > tokens:
            break
    return messages[:best]
