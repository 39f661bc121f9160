"""Where the summarizer calls of one request leave their answers, from any thread or
task, and where the caller waits for them, each until its own deadline (see
:mod:`ctxwin.steps._summaries` for how each call is bounded)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Answer", "Board", "fatal"]

K = TypeVar("K", bound=Hashable)


def fatal(error: BaseException | None) -> bool:
    """A BaseException that is the caller's to handle (interrupt, exit...), not a fallback."""
    return error is not None and not isinstance(error, Exception | asyncio.CancelledError)


@dataclass(frozen=True, slots=True)
class Answer:
    value: object = None
    error: BaseException | None = None


class Board(Generic[K]):
    """Where the calls of one request leave their answers, from any thread, and where the
    caller waits for them, each until its own deadline.

    An answer after its deadline is dropped (a fatal exception excepted), and so is any
    answer once the caller stopped waiting (:meth:`wait` and :meth:`await_` close the
    board and return what came in time).
    """

    def __init__(self, timeouts: Mapping[K, float]) -> None:
        now = time.monotonic()
        self.deadlines = {key: now + timeout for key, timeout in timeouts.items()}
        self._cond = threading.Condition()
        self._answers: dict[K, Answer] = {}
        self._closed = False
        self._wake: Callable[[], None] | None = None
        self.on_due: Callable[[K], None] | None = None
        """Called (the lock held) for each call whose deadline passes without an answer,
        once, when the waiting caller sees it."""
        self._due: set[K] = set()

    def put(self, key: K, answer: Answer) -> None:
        if time.monotonic() >= self.deadlines[key] and not fatal(answer.error):
            return
        with self._cond:
            if self._closed:
                return
            self._answers[key] = answer
            self._cond.notify_all()
            wake = self._wake
        if wake is not None:
            wake()

    def expire(self, key: K) -> None:
        """Refuse any later answer to ``key``, even if the clock says it is not quite due."""
        with self._cond:
            self.deadlines[key] = min(self.deadlines[key], time.monotonic())

    @property
    def closed(self) -> bool:
        """Whether the caller stopped waiting: answers are dropped from now on."""
        with self._cond:
            return self._closed

    def arm(self, loop: asyncio.AbstractEventLoop, key: K, task: asyncio.Task[None]) -> None:
        """Cancel ``task`` at its deadline (its late answer, if it swallows that, refused)."""

        def expire() -> None:
            self.expire(key)
            task.cancel()

        timer = loop.call_later(max(0.0, self.deadlines[key] - time.monotonic()), expire)
        task.add_done_callback(lambda _: timer.cancel())

    def _left(self) -> float | None:
        """Seconds to the next deadline still waited for; None when the wait is over (the
        lock held)."""
        if any(fatal(a.error) for a in self._answers.values()):
            return None
        now = time.monotonic()
        left = [d for k, d in self.deadlines.items() if k not in self._answers and d > now]
        if self.on_due is not None and len(left) + len(self._answers) < len(self.deadlines):
            for key, d in self.deadlines.items():
                if d <= now and key not in self._answers and key not in self._due:
                    self._due.add(key)
                    self.on_due(key)
        return min(left) - now if left else None

    def close(self) -> dict[K, Answer]:
        with self._cond:
            self._closed = True
            self._wake = None
            return dict(self._answers)

    def wait(self) -> dict[K, Answer]:
        """Block the calling thread until every answer is in or past its deadline."""
        try:
            with self._cond:
                while (left := self._left()) is not None:
                    self._cond.wait(left)
        finally:
            answers = self.close()
        return answers

    async def await_(self) -> dict[K, Answer]:
        """:meth:`wait` without blocking the running loop."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(event.set)

        with self._cond:
            self._wake = wake
        try:
            while True:
                event.clear()
                with self._cond:
                    left = self._left()
                if left is None:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(event.wait(), left)
        finally:
            answers = self.close()
        return answers
