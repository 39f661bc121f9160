"""Summarization through the user's model callback, memoized, with timeouts and fallbacks.

The summarizer is ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str``,
sync or async. ctxwin calls it for results over ``summarize.over_tokens`` and memoizes the
summary by content (text, tool, budget, instructions) for the policy's lifetime, so a
result is summarized once and reads the same in every later request. If the callback
raises, times out, returns nothing or returns more than 1.1 x ``max_tokens``, the result is
capped instead and the report says why; that outcome is memoized too (no retry storm, and
the request prefix stays stable).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from ctxwin._exceptions import SummarizerError
from ctxwin._model import ToolResult
from ctxwin._policy import SummarizeConfig
from ctxwin.steps._base import Context, Edit, ResultInfo
from ctxwin.steps.cap import cap_result

SUMMARY_HEADER = "[summary of {tool} output ({tokens} tokens)]\n"
_SLACK = 1.1


class Summarizer(Protocol):
    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str | Awaitable[str]: ...


SummarizerLike: TypeAlias = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Request:
    text: str
    tool: str
    call_id: str | None
    config: SummarizeConfig

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.text, self.tool, self.config.max_tokens, self.config.instructions)


@dataclass(frozen=True, slots=True)
class Outcome:
    summary: str | None
    fallback: str | None


class Pending(Exception):
    """Raised inside a result step when a summary is needed and not yet memoized."""


def is_async(func: object) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable object's __call__
    )


class SummaryRunner:
    """Holds the summary memo and runs pending requests (threads for sync callbacks)."""

    def __init__(
        self, summarizer: SummarizerLike | None, memo: dict[tuple[str, str, int, str], Outcome]
    ) -> None:
        self.summarizer = summarizer
        self.memo = memo
        self.pending: dict[tuple[str, str, int, str], Request] = {}

    def lookup(self, request: Request) -> Outcome:
        hit = self.memo.get(request.key)
        if hit is not None:
            return hit
        self.pending.setdefault(request.key, request)
        raise Pending

    def _judge(self, request: Request, value: object, ctx_count: Callable[[str], int]) -> Outcome:
        if not isinstance(value, str):
            return Outcome(None, f"summarizer_bad_type: returned {type(value).__name__}")
        if not value.strip():
            return Outcome(None, "summarizer_empty")
        n = ctx_count(value)
        if n > request.config.max_tokens * _SLACK:
            return Outcome(None, f"summarizer_too_long: {n} > {request.config.max_tokens} tokens")
        return Outcome(value, None)

    def _call(self, request: Request) -> object:
        assert self.summarizer is not None
        return self.summarizer(
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
        results: dict[tuple[str, str, int, str], tuple[bool, object]] = {}

        def work(key: tuple[str, str, int, str], req: Request) -> None:
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
                self.memo[key] = Outcome(
                    None, f"summarizer_timeout: no answer in {req.config.timeout:g}s"
                )
            elif not outcome[0]:
                e = outcome[1]
                self.memo[key] = Outcome(None, f"summarizer_error: {type(e).__name__}: {e}")
            else:
                self.memo[key] = self._judge(req, outcome[1], count)
        self.pending.clear()

    async def run_async(self, count: Callable[[str], int]) -> None:
        async def one(req: Request) -> Outcome:
            try:
                value: object
                if is_async(self.summarizer):
                    value = await asyncio.wait_for(self._call(req), req.config.timeout)  # type: ignore[arg-type]
                else:
                    value = await asyncio.wait_for(
                        asyncio.to_thread(self._call, req), req.config.timeout
                    )
            except asyncio.TimeoutError:
                return Outcome(None, f"summarizer_timeout: no answer in {req.config.timeout:g}s")
            except Exception as e:  # the user's callback: any failure falls back
                return Outcome(None, f"summarizer_error: {type(e).__name__}: {e}")
            return self._judge(req, value, count)

        items = list(self.pending.items())
        outcomes = await asyncio.gather(*(one(req) for _, req in items))
        for (key, _), outcome in zip(items, outcomes, strict=True):
            self.memo[key] = outcome
        self.pending.clear()


class Summarize:
    """Summarize results over ``summarize.over_tokens`` through the policy's summarizer.

    Without a summarizer (none passed to the policy) the step does nothing and the cap
    applies. Errors are never summarized.
    """

    name = "summarize"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        rules = info.rules.rules if info.rules is not None else None
        cfg = rules.summarize if rules is not None else None
        if cfg is None or result.is_error or ctx.summaries.summarizer is None:
            return result
        assert rules is not None
        text = result.text
        if len(text) <= cfg.over_tokens:
            return result
        tokens = ctx.count(text) if len(text) < 2_000_000 else len(text) // 4
        if tokens <= cfg.over_tokens:
            return result
        outcome = ctx.summaries.lookup(Request(text, info.tool, info.call_id, cfg))
        if outcome.summary is None:
            capped = cap_result(
                result,
                info,
                ctx,
                rules.max_tokens or cfg.max_tokens,
                rules.truncate,
                rules.notice,
                "summarize",
                fallback=outcome.fallback,
            )
            if capped is result:  # short enough for the cap: nothing cut, but say why
                ctx.add_edit(
                    Edit(
                        "summarize",
                        info.tool,
                        info.call_id,
                        tokens,
                        tokens,
                        fallback=outcome.fallback,
                        message_index=info.message_index,
                        chars_before=len(text),
                        chars_after=len(text),
                    )
                )
            return capped
        new = SUMMARY_HEADER.format(tool=info.tool, tokens=tokens) + outcome.summary
        ctx.add_edit(
            Edit(
                "summarize",
                info.tool,
                info.call_id,
                tokens,
                ctx.count(new),
                message_index=info.message_index,
                chars_before=len(text),
                chars_after=len(new),
            )
        )
        return result.with_text(new)
