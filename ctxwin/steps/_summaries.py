"""The policy's summaries: memoized by content, fetched from the summarizer callback by the
engine between passes of the chain, with timeouts and fallbacks."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from ctxwin._exceptions import SummarizerError
from ctxwin._policy.schema import SummarizeConfig

__all__ = [
    "AsyncSummarizer",
    "Pending",
    "Summarizer",
    "SummarizerLike",
    "SummaryRequest",
    "SummaryService",
]


@runtime_checkable
class Summarizer(Protocol):
    """A summarizer callback: the summary of ``text`` in at most ``max_tokens`` tokens.

    ``tool`` and ``call_id`` say what the text is the output of; ``instructions`` are the
    policy's (``summarize.instructions``), to pass to the model as they are.
    """

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str: ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """The async form of :class:`Summarizer` (for ``await policy.aapply(...)``)."""

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> Awaitable[str]: ...


SummarizerLike: TypeAlias = Summarizer | AsyncSummarizer
"""A summarizer callback, sync or async."""


_SLACK = 1.1
"""A summary may run this much over its budget before it is refused."""


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    text: str
    tool: str
    call_id: str | None
    config: SummarizeConfig

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.text, self.tool, self.config.max_tokens, self.config.instructions)


@dataclass(frozen=True, slots=True)
class _Outcome:
    summary: str | None
    fallback: str | None


class Pending(Exception):
    """Raised inside a result step when a summary is needed and not yet memoized: the
    engine fetches every pending summary, then runs the chain again."""


def is_async(func: object) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable object's __call__
    )


_Key: TypeAlias = tuple[str, str, int, str]


class SummaryService:
    """The policy's summaries: memoized by content, fetched from the summarizer by the
    engine between passes of the chain (threads for sync callbacks, tasks for async)."""

    def __init__(self, summarizer: SummarizerLike | None, memo: dict[_Key, _Outcome]) -> None:
        self.summarizer = summarizer
        self.memo = memo
        self.pending: dict[_Key, SummaryRequest] = {}

    def lookup(self, request: SummaryRequest) -> _Outcome:
        hit = self.memo.get(request.key)
        if hit is not None:
            return hit
        self.pending.setdefault(request.key, request)
        raise Pending

    def _judge(
        self, request: SummaryRequest, value: object, ctx_count: Callable[[str], int]
    ) -> _Outcome:
        if not isinstance(value, str):
            return _Outcome(None, f"summarizer_bad_type: returned {type(value).__name__}")
        if not value.strip():
            return _Outcome(None, "summarizer_empty")
        n = ctx_count(value)
        if n > request.config.max_tokens * _SLACK:
            return _Outcome(None, f"summarizer_too_long: {n} > {request.config.max_tokens} tokens")
        return _Outcome(value, None)

    def _call(self, request: SummaryRequest) -> object:
        summarizer: Callable[..., object] | None = self.summarizer
        assert summarizer is not None
        return summarizer(
            request.text,
            tool=request.tool,
            call_id=request.call_id,
            max_tokens=request.config.max_tokens,
            instructions=request.config.instructions,
        )

    def run_sync(self, count: Callable[[str], int]) -> None:
        """Run every pending request; async callbacks need an event loop of their own."""
        if not self.pending:
            return
        if is_async(self.summarizer):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.run_async(count))
                return
            raise SummarizerError(
                "the summarizer is async and an event loop is running: "
                "use `await policy.aapply(...)`"
            )
        # Daemon threads, one per request: a callback that never returns cannot keep the
        # process alive, and the requests run in parallel.
        results: dict[_Key, tuple[bool, object]] = {}

        def work(key: _Key, req: SummaryRequest) -> None:
            try:
                results[key] = (True, self._call(req))
            except Exception as e:  # the user's callback: any failure falls back
                results[key] = (False, e)

        threads = []
        for key, req in self.pending.items():
            th = threading.Thread(
                target=work, args=(key, req), daemon=True, name="ctxwin-summarize"
            )
            th.start()
            threads.append((key, req, th, time.monotonic() + req.config.timeout))
        for key, req, th, deadline in threads:
            th.join(max(deadline - time.monotonic(), 0))
            outcome = results.get(key)
            if outcome is None:
                self.memo[key] = _Outcome(
                    None, f"summarizer_timeout: no answer in {req.config.timeout:g}s"
                )
            elif not outcome[0]:
                e = outcome[1]
                self.memo[key] = _Outcome(None, f"summarizer_error: {type(e).__name__}: {e}")
            else:
                self.memo[key] = self._judge(req, outcome[1], count)
        self.pending.clear()

    async def run_async(self, count: Callable[[str], int]) -> None:
        async def one(req: SummaryRequest) -> _Outcome:
            try:
                value: object
                if is_async(self.summarizer):
                    value = await asyncio.wait_for(self._call(req), req.config.timeout)  # type: ignore[arg-type]
                else:
                    value = await asyncio.wait_for(
                        asyncio.to_thread(self._call, req), req.config.timeout
                    )
            except asyncio.TimeoutError:
                return _Outcome(None, f"summarizer_timeout: no answer in {req.config.timeout:g}s")
            except Exception as e:  # the user's callback: any failure falls back
                return _Outcome(None, f"summarizer_error: {type(e).__name__}: {e}")
            return self._judge(req, value, count)

        items = list(self.pending.items())
        outcomes = await asyncio.gather(*(one(req) for _, req in items))
        for (key, _), outcome in zip(items, outcomes, strict=True):
            self.memo[key] = outcome
        self.pending.clear()
