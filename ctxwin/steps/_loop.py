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

What it costs: one daemon thread at most, whatever the number of requests; a summarizer
that blocks the loop (``time.sleep``, sync I/O) holds up the calls after it until it
yields, each abandoned at its deadline as before. After ``os.fork`` the child, which has
no copy of the thread, starts a loop of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable

from ctxwin._exceptions import SummarizerError

__all__ = ["EXIT_GRACE", "SummaryLoop", "submit", "summary_loop"]

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
        self.thread.start()

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


def submit(callback: Callable[[], None], context: contextvars.Context) -> None:
    """Run ``callback`` on the process's summary loop, in ``context``; a
    :class:`~ctxwin.SummarizerError` where no loop can run it (the interpreter exiting)."""
    try:
        summary_loop().submit(callback, context)
    except RuntimeError as e:  # a closed loop; no new thread at interpreter shutdown
        raise SummarizerError(f"no event loop to run the async summarizer on: {e}") from e


def _at_exit() -> None:
    with _LOCK:
        running = list(_CURRENT)
    for loop in running:
        if loop.pid == os.getpid():
            loop.stop()
