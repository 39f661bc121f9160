"""Test doubles for code that uses ctxwin: a fake token counter and fake summarizers.

``FakeCounter`` counts one token per whitespace-separated word, so expected numbers are easy
to write by hand. ``FakeSummarizer`` returns the first words of the text and records each
call; it can be told to fail in the ways real model callbacks fail (raise, hang, return
nothing, return too much) to test fallbacks.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["AsyncFakeSummarizer", "FakeCounter", "FakeSummarizer", "SummaryCall"]


class FakeCounter:
    """One token per whitespace-separated word (an empty text is 0 tokens)."""

    name = "fake-words"
    exact = True

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


@dataclass(frozen=True)
class SummaryCall:
    text: str
    tool: str
    call_id: str | None
    max_tokens: int
    instructions: str


Behaviour = Literal["ok", "raise", "hang", "empty", "too_long", "not_str"]


@dataclass
class FakeSummarizer:
    """A summarizer callback: ``"summary: "`` and the first ``max_tokens // 2`` words.

    ``behaviour`` makes it fail: ``raise`` (RuntimeError), ``hang`` (sleeps ``hang_for``
    seconds), ``empty`` (returns ""), ``too_long`` (returns the text doubled), ``not_str``.
    """

    behaviour: Behaviour = "ok"
    hang_for: float = 5.0
    calls: list[SummaryCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        with self._lock:
            self.calls.append(SummaryCall(text, tool, call_id, max_tokens, instructions))
        return self._answer(text, max_tokens, sleep=time.sleep)

    def _answer(self, text: str, max_tokens: int, sleep: object) -> str:
        if self.behaviour == "raise":
            raise RuntimeError("model unavailable")
        if self.behaviour == "hang":
            time.sleep(self.hang_for)
        if self.behaviour == "empty":
            return ""
        if self.behaviour == "too_long":
            return text + " " + text
        if self.behaviour == "not_str":
            return None  # type: ignore[return-value]
        return "summary: " + " ".join(text.split()[: max(max_tokens // 2, 1)])


@dataclass
class AsyncFakeSummarizer(FakeSummarizer):
    """The async version of :class:`FakeSummarizer` (``hang`` awaits instead of sleeping)."""

    async def __call__(  # type: ignore[override]
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        with self._lock:
            self.calls.append(SummaryCall(text, tool, call_id, max_tokens, instructions))
        if self.behaviour == "hang":
            await asyncio.sleep(self.hang_for)
        elif self.behaviour != "ok":
            return self._answer(text, max_tokens, sleep=None)
        return "summary: " + " ".join(text.split()[: max(max_tokens // 2, 1)])
