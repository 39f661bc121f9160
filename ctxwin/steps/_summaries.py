"""The policy's summaries: memoized by content, fetched from the summarizer callback by the
engine between passes of the chain, each call bounded by its ``summarize.timeout``.

How each call is bounded:

- A **sync** summarizer runs on a daemon thread of its own, under ``apply`` and ``aapply``
  alike (never on the loop's default executor, which ``asyncio.run`` waits for at exit).
  The caller waits for it until its deadline and no longer; a call without an answer by
  then is abandoned (its thread runs on, its late answer is dropped).
- An **async** summarizer under ``aapply`` runs as a task on the caller's event loop, so
  clients bound to that loop (an ``httpx.AsyncClient``, say) keep working. At its deadline
  the task is cancelled and abandoned, not awaited: one that swallows ``CancelledError``
  cannot hold ``aapply``. One that blocks the loop (``time.sleep``, sync I/O) blocks it for
  every task, ctxwin's included, and Python cannot preempt it: ``aapply`` returns once it
  yields, and an answer it gives after its deadline is refused all the same.
- An **async** summarizer under ``apply`` runs as a task of ctxwin's summary loop: one
  event loop for the process, on a daemon thread, kept from one ``apply`` to the next
  (:mod:`ctxwin.steps._loop`), so an async client's pooled connections stay bound to a
  loop that lives. The caller waits on its own thread, so even one that blocks the loop is
  abandoned at its deadline. One that blocks the loop holds up every call on it, of every
  policy and thread: a call the loop has not started within a quarter of its timeout
  (0.05 to 0.5 s) runs on a one-shot loop of its own instead, if its summarizer has run
  on the summary loop before and is not one of :mod:`ctxwin.summarizers` (whose async
  clients are bound to the summary loop: elsewhere they could only fail); a failure there
  says so (``... (on a loop of its own: the summary loop was busy)``). A call that has no
  answer at its deadline because another task holds its loop (the summary loop, or the
  loop of its own, which a blocking call holds as well), or that its loop never started,
  falls back as ``summarizer_loop_busy`` naming that task (a call not started by then is
  never made, on either loop). ``apply`` called inside a running event loop (that loop's
  thread, or the summary loop's) raises :class:`~ctxwin.SummarizerError` instead: its
  clients may be bound to that loop, and a call from the summary loop itself would wait
  for itself.
- The calls of one request run in parallel: the whole wait is at most the longest of their
  timeouts (plus scheduling slack).

What becomes of an answer: one in time is judged (empty, not a ``str``, not encodable as
UTF-8 (a lone surrogate) fall back, and so does one over 1.1 x ``max_tokens``, counted for
each request with its model's counter (memoized, it is judged again for each); one that
passes and, its header (and recall note) included, is not shorter than the result falls
back in the step, as ``summarizer_not_shorter``); no answer in time falls back as
``summarizer_timeout`` (or ``summarizer_loop_busy``, above); an ``Exception`` as
``summarizer_error``, and so does an ``asyncio.CancelledError`` the callback raises of its
own accord (it is asyncio's signal to the task running the callback, not to its caller;
cancelling ``aapply`` itself propagates, and cancels the calls). Any other
``BaseException`` (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``...) is raised
again in the caller of ``apply``/``aapply``, in its thread or task, as soon as ctxwin sees
it, and nothing of that request is memoized; one raised after ctxwin stopped waiting for
the call reaches nobody and is dropped with it. Every fallback is memoized,
``summarizer_loop_busy`` included: the request carried the cap, and a result must read in
every later request as it was first sent (:mod:`ctxwin.steps._binding`: a summary replacing
a cap the model read invalidates the thinking produced after it).

The callback runs in a copy of the caller's context variables (as ``asyncio.to_thread``
does), with its deadline set in it (:func:`time_left`). An abandoned thread or task is not
killed (Python cannot): it runs until the callback returns; daemon threads do not keep the
process alive, ``asyncio.run`` cancels an abandoned task once more when it closes the loop,
and so does the summary loop when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias, cast, runtime_checkable

from ctxwin._exceptions import SummarizerError
from ctxwin.steps._base import logger
from ctxwin.steps._board import Answer, Board, fatal
from ctxwin.steps._loop import (
    NOT_MADE,
    OWN_LOOP,
    SUMMARY_LOOP,
    Batch,
    rescue_after,
    run_own_loop,
)
from ctxwin.steps._names import summarizer_name
from ctxwin.steps._shelf import Shelf
from ctxwin.steps._verdict import Outcome, SummaryMemo, SummaryRequest, judge, within_budget

if TYPE_CHECKING:
    from ctxwin.tokens.counters import TokenCounter

__all__ = [
    "AsyncSummarizer",
    "Pending",
    "Summarizer",
    "SummarizerLike",
    "SummaryRequest",
    "SummaryService",
    "time_left",
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
    """The async form of :class:`Summarizer` (for ``await policy.aapply(...)``): an
    ``async def`` function, or an object whose ``__call__`` is one. ctxwin tells it from a
    sync one by that; a plain function returning an awaitable is called as a sync one, and
    each of its summaries falls back as ``summarizer_bad_type``."""

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> Awaitable[str]: ...


SummarizerLike: TypeAlias = Summarizer | AsyncSummarizer
"""A summarizer callback, sync or async."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ctxwin_summary_deadline", default=None
)
"""When ctxwin stops waiting for the summary being made in this context (``time.monotonic``
seconds); set in the context each summarizer call runs in, None elsewhere."""


def time_left() -> float | None:
    """Seconds before ctxwin stops waiting for the summary this summarizer call is making
    (at most 0.0 once it has stopped), or None outside a summarizer call. A summarizer
    passes it to its client as the request's timeout, so that a call ctxwin gave up on does
    not go on for the client's own timeout (a client's retries still run after it, each
    bounded the same way)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _context(deadline: float) -> contextvars.Context:
    """A copy of the caller's context variables for one call, its deadline set in it."""
    context = contextvars.copy_context()
    context.run(_DEADLINE.set, deadline)
    return context


class Pending(Exception):
    """Raised inside a result step when a summary is needed and not yet memoized: the
    engine fetches every pending summary, then runs the chain again."""


def is_async(func: object) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable object's __call__
    )


_Key: TypeAlias = tuple[bytes, str, int, str]
_Batch: TypeAlias = Batch[_Key]


def _rescuable(summarizer: object) -> bool:
    """Whether a call the summary loop does not get to in time may run on a loop of its
    own: not for the ready summarizers (:mod:`ctxwin.summarizers`), whose async clients
    are bound to the summary loop, so that it could only fail there."""
    while isinstance(summarizer, functools.partial):
        summarizer = summarizer.func
    return getattr(summarizer, "backend", None) is None


def _shared_key(request: SummaryRequest, summarizer: object) -> str:
    cfg = request.config
    return Shelf.summary_key(
        request.text, request.tool, cfg.max_tokens, cfg.instructions, summarizer_name(summarizer)
    )


PARALLEL_CALLS = 32
"""The most summarizer calls one request makes at a time: a history of hundreds of long
results (a resumed session, a policy switched on mid-run) made them all at once, a thread or
task each, into a provider's rate limit. A call waits for one of them within its own
``timeout``, counted from the request's start: one not started by then falls back as
``summarizer_timeout: not started``, naming the limit where the request made more calls
than it (with 8, a history of 20 results at 0.4 s a summary and a 1 s timeout had 4 not
started)."""

_ABANDONED: set[asyncio.Task[None]] = set()
"""Every summary task until it ends, abandoned ones included: the loop itself keeps only
weak references to its tasks."""


class SummaryService:
    """The policy's summaries: memoized by content, fetched from the summarizer by the
    engine between passes of the chain (daemon threads for sync callbacks, tasks for async),
    each call bounded as the module docstring says."""

    def __init__(
        self,
        summarizer: SummarizerLike | None,
        memo: SummaryMemo,
        counter: TokenCounter,
        shelf: Shelf | None = None,
    ) -> None:
        self.summarizer = summarizer
        self.memo = memo
        self.count = counter.count
        """The counter of the request served (its model's): a summary's length is judged
        with it (:func:`~ctxwin.steps._verdict.within_budget`)."""
        self.shelf = shelf
        """Where summaries are shared with other processes (the policy's store)."""
        self.pending: dict[_Key, SummaryRequest] = {}
        self._batch: _Batch | None = None
        """The calls on the summary loop (a sync ``apply`` of an async summarizer)."""
        self._busy: dict[_Key, str] = {}
        """The calls the summary loop failed: another task held it, or it never started them."""
        self.waited = False
        """Whether the engine has fetched the pending summaries (the pass after that is the
        last: what it finds pending stays as it is)."""
        self._started: set[_Key] = set()
        """The calls begun (the others waited for one of :data:`PARALLEL_CALLS`)."""

    def lookup(self, request: SummaryRequest) -> Outcome:
        """The summary of ``request``, or the fallback saying why none, its length judged
        with this request's counter; raises :class:`Pending` when it is still to be made."""
        key = request.key
        hit = self.memo.get(key)
        if hit is None and self.shelf is not None:
            shared = self.shelf.summary(_shared_key(request, self.summarizer))
            if shared is not None:  # another worker (or an earlier process) made it
                hit = self._remember(key, Outcome(shared, None))
        if hit is None:
            self.pending.setdefault(key, request)
            raise Pending
        return within_budget(request, hit, self.count)

    def _remember(
        self, key: _Key, outcome: Outcome, request: SummaryRequest | None = None
    ) -> Outcome:
        """The memo's outcome for ``key`` (the first one stays: :class:`SummaryMemo`). A
        failure memoized here (``request``: made now) is logged once as a warning: every
        request after reads it from the memo, and logs its edit at INFO as any edit (so is
        a summary too long by this request's counter: a request counting with it reads the
        same)."""
        found, new = self.memo.remember(key, outcome)
        if new and request is not None:
            found = within_budget(request, found, self.count)
        if new and request is not None and found.fallback is not None:
            logger.warning(
                "ctxwin summarize %s %s failed, capped instead for good: %s",
                request.tool,
                request.call_id,
                found.fallback,
                extra={
                    "ctxwin_tool": request.tool,
                    "ctxwin_call_id": request.call_id,
                    "ctxwin_fallback": found.fallback,
                },
            )
        return found

    def run_sync(self) -> None:
        """Fetch every pending summary; async callbacks run on the summary loop."""
        self.waited = True
        if not self.pending:
            return
        board = Board({k: r.config.timeout for k, r in self.pending.items()})
        if is_async(self.summarizer):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                self._start_on_loop(board)
            else:
                raise SummarizerError(
                    "the summarizer is async and an event loop is running: "
                    "use `await policy.aapply(...)`"
                )
        else:
            self._start_threads(board)
        self._settle(board.wait())

    async def run_async(self, *, offload: bool = False) -> None:
        """Fetch every pending summary, async callbacks as tasks of the running loop
        (``offload``: what the answers leave in the store is written from a worker thread)."""
        self.waited = True
        if not self.pending:
            return
        board = Board({k: r.config.timeout for k, r in self.pending.items()})
        tasks: list[asyncio.Task[None]] = []
        if is_async(self.summarizer):
            tasks = self._start_tasks(board)
        else:
            self._start_threads(board)
        try:
            answers = await board.await_()
        finally:
            for task in tasks:  # past their deadline, or moot: cancelled, never awaited
                task.cancel()
        if offload:
            await asyncio.to_thread(self._settle, answers)
        else:
            self._settle(answers)

    # ----------------------------------------------------------------- the calls

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

    def _work(self, board: Board[_Key], key: _Key, request: SummaryRequest) -> None:
        try:
            value = self._call(request)
        except BaseException as e:  # the caller judges it: fallback, or raised again
            board.put(key, Answer(error=e))
        else:
            board.put(key, Answer(value))

    async def _work_async(
        self,
        board: Board[_Key],
        key: _Key,
        request: SummaryRequest,
        slots: asyncio.Semaphore,
        batch: _Batch | None = None,
    ) -> None:
        if batch is not None and (not batch.claim(key, SUMMARY_LOOP) or board.closed):
            return  # made on a loop of its own, or too late: made nowhere
        try:
            async with slots:  # cancelled at its deadline, waiting or not
                if time.monotonic() >= board.deadlines[key]:  # a loop held past it: too late
                    return
                self._started.add(key)
                value = await cast(Awaitable[object], self._call(request))
        except BaseException as e:  # the caller's, never the loop's; our cancel lands here
            board.put(key, Answer(error=e))
        else:
            board.put(key, Answer(value))

    def _start_threads(self, board: Board[_Key]) -> None:
        """At most :data:`PARALLEL_CALLS` daemon threads, each making the next call not
        made yet, in a copy of the caller's context: a call that never returns keeps no one
        waiting (each has its deadline), and a call not started by its deadline is never
        made."""
        calls = collections.deque(
            (key, request, _context(board.deadlines[key])) for key, request in self.pending.items()
        )

        def work() -> None:
            while not board.closed:
                try:
                    key, request, context = calls.popleft()
                except IndexError:
                    return
                if time.monotonic() < board.deadlines[key]:
                    self._started.add(key)
                    context.run(self._work, board, key, request)

        for _ in range(min(PARALLEL_CALLS, len(calls))):
            threading.Thread(target=work, daemon=True, name="ctxwin-summarize").start()

    def _start_tasks(
        self,
        board: Board[_Key],
        calls: list[tuple[_Key, SummaryRequest]] | None = None,
        batch: _Batch | None = None,
    ) -> list[asyncio.Task[None]]:
        """One task per call on the running loop, cancelled at its deadline (``batch``: the
        calls of a sync ``apply`` on the summary loop, each made there if not elsewhere)."""
        loop = asyncio.get_running_loop()
        tasks = []
        who = summarizer_name(self.summarizer)
        slots = asyncio.Semaphore(PARALLEL_CALLS)  # of this loop, for this request's calls
        for key, request in calls if calls is not None else self.pending.items():
            work = self._work_async(board, key, request, slots, batch)
            name = f"{who} summarizing {request.tool}"  # says what holds a blocked loop
            name += f" (call {request.call_id})" if request.call_id else ""
            task = _context(board.deadlines[key]).run(loop.create_task, work, name=name)
            if batch is not None:
                batch.tasks[key] = task
            board.arm(loop, key, task)
            _ABANDONED.add(task)
            task.add_done_callback(_ABANDONED.discard)
            tasks.append(task)
        return tasks

    def _start_on_loop(self, board: Board[_Key]) -> None:
        """The async calls of a sync ``apply``, as tasks of the process's summary loop
        (:mod:`ctxwin.steps._loop`), started there in a copy of the caller's context; those
        the loop does not get to in time run on a loop of their own, where the summarizer
        may (:func:`_rescuable`); a call the loop gets to only after its deadline, or after
        the caller stopped waiting, is not made."""
        calls = list(self.pending.items())
        batch: _Batch = Batch(self.pending, self.summarizer)
        self._batch, board.on_due = batch, self._due

        def start() -> None:
            if not board.closed:  # the calls not made elsewhere already
                self._start_tasks(board, [c for c in calls if batch.where(c[0]) is None], batch)

        def rescue(keys: list[_Key]) -> None:
            mine = set(keys)

            async def main() -> None:
                own = [c for c in calls if c[0] in mine]
                tasks = self._start_tasks(board, own)
                batch.on_own_loop(
                    asyncio.get_running_loop(), zip([k for k, _ in own], tasks, strict=True)
                )
                await asyncio.wait(tasks)

            run_own_loop(main, contextvars.copy_context())

        after = rescue_after(min(r.config.timeout for _, r in calls))
        helps = _rescuable(self.summarizer)
        batch.start(start, contextvars.copy_context(), rescue if helps else None, after)

    def _due(self, key: _Key) -> None:
        """A call past its deadline without an answer: say whether the loop it was on was
        to blame (another task held it then, or it never started the call): the summary
        loop, or the loop of its own it was moved to."""
        batch = self._batch
        if batch is None:
            return
        holder = batch.holder(key)
        timeout = f"{self.pending[key].config.timeout:g}s"
        if batch.where(key) == OWN_LOOP:
            if holder is not None:
                began = "no answer" if key in self._started else "not started"
                self._busy[key] = (
                    f"summarizer_loop_busy: {began} in {timeout}, the loop held by {holder}"
                )
            return
        held = f", the summary loop held by {holder}" if holder is not None else ""
        if batch.claim(key, NOT_MADE):
            self._busy[key] = f"summarizer_loop_busy: not started in {timeout}{held}"
        elif holder is not None:
            self._busy[key] = f"summarizer_loop_busy: no answer in {timeout}{held}"

    # ----------------------------------------------------------------- outcomes

    def _settle(self, answers: dict[_Key, Answer]) -> None:
        """Memoize each call's outcome, or raise the first fatal exception again."""
        pending, self.pending = self.pending, {}
        limit = f" (at most {PARALLEL_CALLS} calls at a time)"
        for answer in answers.values():
            if fatal(answer.error):
                assert answer.error is not None
                raise answer.error
        for key, request in pending.items():
            got = answers.get(key)
            if got is None:
                why = f"summarizer_timeout: no answer in {request.config.timeout:g}s"
                if key not in self._started:  # the limit held it only with more calls
                    why = f"summarizer_timeout: not started in {request.config.timeout:g}s"
                    why += limit if len(pending) > PARALLEL_CALLS else ""
                outcome = Outcome(None, self._ran_where(key, self._busy.get(key) or why))
            elif got.error is not None:
                e = got.error
                why = f"summarizer_error: {type(e).__name__}: {e}"
                outcome = Outcome(None, self._ran_where(key, why))
            else:
                outcome = judge(got.value)
                if outcome.summary is not None and self.shelf is not None and key not in self.memo:
                    shared = _shared_key(request, self.summarizer)
                    kept = self.shelf.keep_summary(shared, outcome.summary)
                    outcome = outcome if kept == outcome.summary else Outcome(kept, None)
            self._remember(key, outcome, request)

    def _ran_where(self, key: _Key, why: str) -> str:
        """``why`` a call failed, saying so where it ran on a loop of its own."""
        if self._batch is None or self._batch.where(key) != OWN_LOOP:
            return why
        return f"{why} (on a loop of its own: the summary loop was busy)"
