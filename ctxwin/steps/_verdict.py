"""A summary request and what its answer makes: the summary, or the fallback saying why
not (the checks every answer passes before it is memoized)."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ctxwin._policy.schema import SummarizeConfig

__all__ = ["SLACK", "Outcome", "SummaryRequest", "judge"]

SLACK = 1.1
"""A summary may run this much over its budget before it is refused."""


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    text: str
    tool: str
    call_id: str | None
    config: SummarizeConfig

    @property
    def key(self) -> tuple[bytes, str, int, str]:
        """What a summary is memoized by: a digest of the text (the memo outlives the
        conversations a policy serves: keyed by the text itself, it held every long
        original it summarized), the tool, the budget and the instructions."""
        digest = hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).digest()
        return (digest, self.tool, self.config.max_tokens, self.config.instructions)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A summary, or the fallback that says why there is none."""

    summary: str | None
    fallback: str | None


def judge(request: SummaryRequest, value: object, ctx_count: Callable[[str], int]) -> Outcome:
    """What a summarizer's answer makes: the summary, or the fallback saying why not."""
    if inspect.isawaitable(value):  # an async summarizer not written as async def
        close = getattr(value, "close", None)
        if callable(close):
            close()  # never awaited: no RuntimeWarning at its collection
        return Outcome(
            None,
            f"summarizer_bad_type: returned {type(value).__name__}: define an async "
            "summarizer with async def (a function returning an awaitable is called as a "
            "sync one)",
        )
    if not isinstance(value, str):
        return Outcome(None, f"summarizer_bad_type: returned {type(value).__name__}")
    if not value.strip():
        return Outcome(None, "summarizer_empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate: no provider would take it
        return Outcome(None, f"summarizer_bad_text: {e.reason} at character {e.start}")
    n = ctx_count(value)
    if n > request.config.max_tokens * SLACK:
        return Outcome(None, f"summarizer_too_long: {n:,} > {request.config.max_tokens:,} tokens")
    return Outcome(value, None)
