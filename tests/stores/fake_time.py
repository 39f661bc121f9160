"""A fake clock for the shelf and the stores: tests of TTLs, and of looks due by time."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

import ctxwin.steps._shelf as shelf_module
import ctxwin.stores.memory as memory_module
import ctxwin.stores.sqlite as sqlite_module


class Clock:
    """The fake time; ``aging`` is called with the seconds the clock moves (a Redis's keys
    get older on the server: :func:`age_keys`)."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.aging: Callable[[float], None] = lambda seconds: None

    def at(self, when: float) -> None:
        assert when >= self.now
        self.aging(when - self.now)
        self.now = when

    def wait(self, seconds: float) -> None:
        self.at(self.now + seconds)


def install(monkeypatch: pytest.MonkeyPatch, now: float = 1000.0) -> Clock:
    """A clock the shelf (its looks and its cool-off), the memory store and SQLite read."""
    clock = Clock(now)
    fake_time = types.SimpleNamespace(monotonic=lambda: clock.now)
    monkeypatch.setattr(shelf_module, "_clock", lambda: clock.now)
    monkeypatch.setattr(shelf_module, "time", fake_time)
    monkeypatch.setattr(memory_module, "time", fake_time)
    monkeypatch.setattr(sqlite_module, "_now", lambda: 1.7e9 + clock.now)
    return clock


def age_keys(client: Any, prefix: str, seconds: float) -> None:
    """The Redis keys under ``prefix`` as they would be ``seconds`` later on the server."""
    for key in client.scan_iter(match=f"{prefix}*"):
        left = client.pttl(key)
        if left < 0:
            continue
        if left - seconds * 1000 <= 0:
            client.delete(key)
        else:
            client.pexpire(key, int(left - seconds * 1000))
