"""The event loop the async summarizers of a sync ``apply`` run on: one for the process,
started on a daemon thread when first needed, kept while the process lives, and stopped
when the interpreter exits.

Why one that lives on: an async client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``,
an ``httpx.AsyncClient``) keeps its pooled connections bound to the loop that opened them,
and cannot be used from another loop (encode/httpx#2473: "Don't try to share an
``AsyncClient`` across multiple event loops"). A loop per ``apply`` (``asyncio.run``) left
every other summary failing with "Event loop is closed" once the first loop was gone. One
loop for the whole process (not one per policy or per summarizer) is the loop the client
was first used on whichever policy, summarizer or thread calls ``apply``: the same client
often serves two summarizers (two models) or two policies.

What it costs: one daemon thread at most, whatever the number of requests, and a shared
fate. A summarizer that blocks the loop (a sync SDK call inside ``async def``,
``time.sleep``) holds up every call on it, whichever policy or thread made it, until it
yields. So each call of a :class:`Batch` is started exactly once, by whichever comes
first (:meth:`Batch.claim`):

- its task's first step on the summary loop;
- or, where the loop has not got to it within :func:`rescue_after` (a quarter of the
  shortest timeout, 0.05 to 0.5 s) and its summarizer has already run on this loop, a
  one-shot loop of its own on a daemon thread (:func:`run_own_loop`), as every ``apply``
  had before the summary loop: a blocked loop does not hold up the others, and their
  blocking calls run in parallel again. The caller may forbid it (the ready summarizers
  of :mod:`ctxwin.summarizers`: their async clients are bound to the summary loop). A
  summarizer that has not run on the summary loop yet waits for it: started elsewhere
  first, a client would bind its pool (or an ``asyncio.Lock``, an ``Event``) to the
  one-shot loop, closed after, and fail on the summary loop afterwards (an
  ``AsyncOpenAI``: "Event loop is closed"; an object that binds at first use: for good).
  One that has run there can only fail on the other loop ("... is bound to a different
  event loop"), and that failure says where it ran.

A call that has no answer by its deadline while another task holds its loop (the summary
loop, or the loop of its own it was moved to: :meth:`Batch.holder`), or that its loop
never started, is reported as
``summarizer_loop_busy`` naming that task (a call not started by then is never made),
memoized as any fallback is (:mod:`ctxwin.steps._summaries`); a call blocking the loop
past its own deadline is a plain ``summarizer_timeout``. After ``os.fork`` the child,
which has no copy of the thread, starts a loop of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import os
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Hashable, Iterable
from typing import Any, Generic, Literal, TypeVar

from ctxwin._exceptions import SummarizerError

__all__ = [
    "EXIT_GRACE",
    "NOT_MADE",
    "OWN_LOOP",
    "SUMMARY_LOOP",
    "Batch",
    "SummaryLoop",
    "Where",
    "rescue_after",
    "run_own_loop",
    "submit",
    "summary_loop",
]

K = TypeVar("K", bound=Hashable)

EXIT_GRACE = 1.0
"""Seconds the interpreter's exit waits for the loop to wind down (its abandoned calls
cancelled, its async generators closed); a loop that a summarizer blocks is left to die
with its daemon thread."""


class SummaryLoop:
    """An event loop running on a daemon thread of its own until :meth:`stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, daemon=True, name="ctxwin-summarize-loop")
        self._ran: weakref.WeakSet[object] = weakref.WeakSet()
        self._ran_lock = threading.Lock()
        self.thread.start()

    def note_run(self, summarizer: object) -> None:
        """Note that ``summarizer`` has started a call on this loop."""
        with self._ran_lock, contextlib.suppress(TypeError):  # no weak reference: not noted
            self._ran.add(summarizer)

    def has_run(self, summarizer: object) -> bool:
        """Whether ``summarizer`` has started a call on this loop (whatever it binds to a
        loop, it has bound to this one)."""
        with self._ran_lock:
            try:
                return summarizer in self._ran
            except TypeError:  # no weak reference: never noted
                return False

    def alive(self) -> bool:
        """Whether calls submitted now will run: this process's loop, not stopped."""
        return self.pid == os.getpid() and self.thread.is_alive() and not self.loop.is_closed()

    def submit(self, callback: Callable[[], None], context: contextvars.Context) -> None:
        """Run ``callback`` on the loop, in ``context``, as soon as the loop gets to it."""
        self.loop.call_soon_threadsafe(callback, context=context)

    def stop(self, grace: float = EXIT_GRACE) -> None:
        """Stop the loop and wait up to ``grace`` seconds for its thread to wind it down."""
        with contextlib.suppress(RuntimeError):  # closed already
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not threading.current_thread():
            self.thread.join(grace)

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                _wind_down(loop)
            finally:
                loop.close()


def _wind_down(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on ``loop`` (abandoned calls), again while it goes on, for
    half of :data:`EXIT_GRACE` at most (one that swallows every cancellation is left), then
    close its async generators."""
    end = time.monotonic() + EXIT_GRACE / 2
    pending = asyncio.all_tasks(loop)
    while pending and (left := end - time.monotonic()) > 0:
        for task in pending:
            task.cancel()
        _, pending = loop.run_until_complete(asyncio.wait(pending, timeout=min(left, 0.05)))
    loop.run_until_complete(loop.shutdown_asyncgens())


_LOCK = threading.Lock()
_CURRENT: list[SummaryLoop] = []
"""The process's loop once started (a list: no ``global`` statement)."""


def summary_loop() -> SummaryLoop:
    """The process's summary loop, started on first use (again in a forked child)."""
    with _LOCK:
        if _CURRENT and _CURRENT[0].alive():
            return _CURRENT[0]
        first = not _CURRENT
        _CURRENT[:] = [SummaryLoop()]
        if first:
            atexit.register(_at_exit)
        return _CURRENT[0]


def submit(
    callback: Callable[[], None], context: contextvars.Context, home: SummaryLoop | None = None
) -> None:
    """Run ``callback`` on the process's summary loop (``home``, by default the current
    one), in ``context``; a :class:`~ctxwin.SummarizerError` where no loop can run it (the
    interpreter exiting)."""
    try:
        (home or summary_loop()).submit(callback, context)
    except RuntimeError as e:  # a closed loop; no new thread at interpreter shutdown
        raise _no_loop(e) from e


def _no_loop(error: RuntimeError) -> SummarizerError:
    return SummarizerError(f"no event loop to run the async summarizer on: {error}")


# ---------------------------------------------------------------- one apply's calls

Where = Literal["summary loop", "own loop", "not made"]
SUMMARY_LOOP: Where = "summary loop"
OWN_LOOP: Where = "own loop"
NOT_MADE: Where = "not made"

RESCUE_AFTER = (0.05, 0.5)
"""The least and the most seconds a call waits for the summary loop to start it before it
runs on a loop of its own (:func:`rescue_after`): far above the milliseconds a free loop
takes, even with every core busy, and a small part of any timeout."""


def rescue_after(timeout: float) -> float:
    """How long the calls of a batch whose shortest timeout is ``timeout`` wait for the
    summary loop to start them: a quarter of it, within :data:`RESCUE_AFTER`."""
    return min(RESCUE_AFTER[1], max(RESCUE_AFTER[0], timeout / 4))


class Batch(Generic[K]):
    """The async calls of one sync ``apply`` (named by their keys), each started exactly
    once: on the summary loop, or on a loop of its own (see the module docstring)."""

    def __init__(self, keys: Iterable[K], summarizer: object) -> None:
        self.keys = tuple(keys)
        self.summarizer = summarizer
        self.home: SummaryLoop | None = None
        """The summary loop the batch was submitted to."""
        self.tasks: dict[K, asyncio.Task[None]] = {}
        """Each call's task, once made: on the summary loop, or on the loop of its own."""
        self.own_loop: asyncio.AbstractEventLoop | None = None
        """The one-shot loop the calls the summary loop did not get to run on, once made."""
        self._cond = threading.Condition()
        self._where: dict[K, Where] = {}

    def claim(self, key: K, where: Where) -> bool:
        """Whether ``key``'s call is to be made ``where`` (or not made): True for the
        first claim only."""
        with self._cond:
            if key in self._where:
                return False
            self._where[key] = where
            self._cond.notify_all()
        if where == SUMMARY_LOOP and self.home is not None:
            self.home.note_run(self.summarizer)
        return True

    def where(self, key: K) -> Where | None:
        with self._cond:
            return self._where.get(key)

    def start(
        self,
        on_loop: Callable[[], None],
        context: contextvars.Context,
        rescue: Callable[[list[K]], None] | None,
        after: float,
    ) -> None:
        """Submit ``on_loop`` (which makes the tasks) to the summary loop; then, unless
        ``rescue`` is None, wait up to ``after`` seconds for the loop to start every call,
        and hand the calls it has not started to ``rescue`` (claimed as :data:`OWN_LOOP`)
        where the summarizer has run on the loop before."""
        try:
            self.home = summary_loop()  # before the loop can claim a call (:meth:`claim`)
        except RuntimeError as e:  # no new thread at interpreter shutdown
            raise _no_loop(e) from e
        submit(on_loop, context, self.home)
        if rescue is None:
            return
        with self._cond:
            self._cond.wait_for(lambda: len(self._where) == len(self.keys), after)
            if not self.home.has_run(self.summarizer):
                return
            free = [k for k in self.keys if k not in self._where]
            self._where.update(dict.fromkeys(free, OWN_LOOP))
        if not free:
            return
        try:
            rescue(free)
        except RuntimeError:  # no new thread (the interpreter exiting): the loop may yet
            with self._cond:
                for key in free:
                    del self._where[key]

    def on_own_loop(
        self, loop: asyncio.AbstractEventLoop, tasks: Iterable[tuple[K, asyncio.Task[None]]]
    ) -> None:
        """Note the loop of its own the calls the summary loop did not get to run on, and
        their tasks there (before any of them runs)."""
        self.tasks.update(tasks)
        self.own_loop = loop

    def holder(self, key: K) -> str | None:
        """The name of the task ``key``'s loop (the summary loop, or the loop of its own it
        was moved to) runs now, unless none or ``key``'s own (read from the caller's
        thread: what holds the loop at ``key``'s deadline)."""
        home = self.home.loop if self.home is not None else None
        loop = self.own_loop if self.where(key) == OWN_LOOP else home
        if loop is None:
            return None
        task = asyncio.current_task(loop)
        if task is None or task is self.tasks.get(key):
            return None
        return task.get_name()


def run_own_loop(
    main: Callable[[], Coroutine[Any, Any, None]], context: contextvars.Context
) -> None:
    """Run ``main()`` in a one-shot event loop on a daemon thread, in ``context``."""
    threading.Thread(
        target=context.run, args=(_run, main), daemon=True, name="ctxwin-summarize-own-loop"
    ).start()


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(main())


def _at_exit() -> None:
    with _LOCK:
        running = list(_CURRENT)
    for loop in running:
        if loop.pid == os.getpid():
            loop.stop()
