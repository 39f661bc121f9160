"""A fake clock for the shelf and the stores: tests of TTLs, and of looks due by time."""

from __future__ import annotations

import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._shelf as shelf_module
import ctxwin.stores.memory as memory_module
import ctxwin.stores.sqlite as sqlite_module
from ctxwin.stores.memory import MemoryStore


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


def two_workers(
    request: pytest.FixtureRequest, clock: Clock, tmp_path: Path, rules: dict[str, Any], ttl: float
) -> Iterator[list[ctxwin.Policy]]:
    """Two policies (two workers) on one store with a TTL, of the kind ``request.param``
    names (``memory``, ``sqlite``, ``redis``); a Redis's keys age with ``clock`` and go
    afterwards."""
    if request.param == "memory":
        store: Any = MemoryStore(ttl=ttl)
        yield [ctxwin.load_policy(rules, store=store) for _ in range(2)]
    elif request.param == "sqlite":
        config = {**rules, "store": {"url": f"sqlite:///{tmp_path / 'store.db'}", "ttl": ttl}}
        yield [ctxwin.load_policy(config) for _ in range(2)]  # each its own connection
    else:
        redis = pytest.importorskip("redis")
        from ctxwin.stores.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        prefix = f"ctxwin:test-{uuid.uuid4().hex}:"
        store = RedisStore(url, ttl=ttl, prefix=prefix)
        client = redis.Redis.from_url(url, socket_timeout=5)
        clock.aging = lambda seconds: age_keys(client, prefix, seconds)
        yield [ctxwin.load_policy(rules, store=store) for _ in range(2)]
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
        client.close()
        store.close()
