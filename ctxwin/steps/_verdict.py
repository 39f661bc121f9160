"""A summary request and what its answer makes: the summary, or the fallback saying why
not (the checks every answer passes before it is memoized, and its length, judged with the
counter of each request that reads it)."""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ctxwin._policy.schema import SummarizeConfig

__all__ = [
    "SLACK",
    "SUMMARY_ENTRIES",
    "Outcome",
    "SummaryMemo",
    "SummaryRequest",
    "judge",
    "within_budget",
]

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


def judge(value: object) -> Outcome:
    """What a summarizer's answer makes, whoever reads it: the summary, or the fallback
    saying why not (its length is judged apart: :func:`within_budget`)."""
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
    return Outcome(value, None)


def within_budget(
    request: SummaryRequest, outcome: Outcome, count: Callable[[str], int]
) -> Outcome:
    """``outcome`` for a request counting with ``count`` (the counter of its model): a
    summary over :data:`SLACK` x its budget by that counter falls back. Judged whenever a
    request reads it, never memoized: the memo is the policy's, shared by models that count
    each with its own counter (``model_counters``), and a verdict memoized with one counter
    was every model's."""
    if outcome.summary is None:
        return outcome
    n = count(outcome.summary)
    if n > request.config.max_tokens * SLACK:
        return Outcome(None, f"summarizer_too_long: {n:,} > {request.config.max_tokens:,} tokens")
    return outcome


SUMMARY_ENTRIES = 20_000
"""The most summaries (and fallbacks) a policy remembers: a server's policy outlives the
conversations it serves."""

MemoKey = tuple[bytes, str, int, str]


class SummaryMemo:
    """A policy's summaries and fallbacks by :attr:`SummaryRequest.key`. The first outcome
    for a key stays (a request that settled it sent it, and so does every request after);
    a hit makes it the newest; past :data:`SUMMARY_ENTRIES`, the quarter used least lately
    goes (asked for again, a summary is made again). Locked: requests settle their
    summaries outside the policy's lock, and policies made by ``with_overrides`` share it."""

    def __init__(self) -> None:
        self._outcomes: OrderedDict[MemoKey, Outcome] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: MemoKey) -> Outcome | None:
        with self._lock:
            found = self._outcomes.get(key)
            if found is not None:
                self._outcomes.move_to_end(key)
            return found

    def remember(self, key: MemoKey, outcome: Outcome) -> tuple[Outcome, bool]:
        """The outcome kept for ``key``, and whether it is ``outcome``, new."""
        with self._lock:
            found = self._outcomes.setdefault(key, outcome)
            if len(self._outcomes) > SUMMARY_ENTRIES:
                for _ in range(SUMMARY_ENTRIES // 4):
                    self._outcomes.popitem(last=False)
            return found, found is outcome

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._outcomes

    def __len__(self) -> int:
        return len(self._outcomes)

    def __iter__(self) -> Iterator[MemoKey]:
        with self._lock:
            return iter(list(self._outcomes))
