"""A put never shortens the life a key has left, on every store.

Two policies on one store with different TTLs put the same originals (a handle names its
content): the put of the one with the shorter TTL replaced the expiry of the other's entry,
which did not put it again for up to 10 minutes, so its requests quoted a handle the store
had dropped. Time is a fake clock (for Redis, the keys' TTLs are shortened on the server
as it moves).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin.stores import Store
from ctxwin.stores.memory import MemoryStore
from ctxwin.stores.sqlite import SQLiteStore
from ctxwin.testing import agent_body
from tests.stores.fake_time import Clock, age_keys, install


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return install(monkeypatch, 1000.0)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def opened(
    request: pytest.FixtureRequest, clock: Clock, tmp_path: Path
) -> Iterator[Callable[[float | None], Store]]:
    """Opens stores of one kind on one place, each with its own default TTL."""
    if request.param == "memory":
        shared = MemoryStore()
        yield lambda ttl: _defaulting(shared, ttl)
    elif request.param == "sqlite":
        path = tmp_path / "store.db"
        yield lambda ttl: SQLiteStore(f"sqlite:///{path}", ttl=ttl)
    else:
        redis = pytest.importorskip("redis")
        from ctxwin.stores.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        prefix = f"ctxwin:test-{uuid.uuid4().hex}:"
        client = redis.Redis.from_url(url, socket_timeout=5)
        clock.aging = lambda seconds: age_keys(client, prefix, seconds)
        yield lambda ttl: RedisStore(url, ttl=ttl, prefix=prefix)
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
        client.close()


class _Defaulting:
    """One memory store seen with a default TTL of its own (as two policies would)."""

    def __init__(self, inner: MemoryStore, ttl: float | None) -> None:
        self.inner, self.ttl, self.url = inner, ttl, inner.url

    def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.inner.put(key, value, ttl=ttl if ttl is not None else self.ttl)

    def close(self) -> None:
        pass


def _defaulting(inner: MemoryStore, ttl: float | None) -> Store:
    return _Defaulting(inner, ttl)


def test_a_shorter_ttl_does_not_shorten_a_key_kept_forever(
    opened: Callable[[float | None], Store], clock: Clock
) -> None:
    forever, brief = opened(None), opened(1.0)
    forever.put("k", b"v")
    brief.put("k", b"v")
    clock.wait(5.0)
    assert forever.get("k") == b"v"


def test_a_shorter_ttl_does_not_shorten_a_longer_one_and_a_longer_one_lengthens(
    opened: Callable[[float | None], Store], clock: Clock
) -> None:
    store = opened(None)
    store.put("k", b"v", ttl=60.0)
    store.put("k", b"w", ttl=1.0)  # the value is replaced, its life is not shortened
    clock.wait(30.0)
    assert store.get("k") == b"w"
    store.put("k", b"w", ttl=100.0)
    clock.wait(90.0)
    assert store.get("k") == b"w"
    clock.wait(20.0)
    assert store.get("k") is None


def test_a_key_put_again_after_it_expired_takes_the_new_ttl(
    opened: Callable[[float | None], Store], clock: Clock
) -> None:
    store = opened(None)
    store.put("k", b"v", ttl=10.0)
    clock.wait(11.0)
    store.put("k", b"v", ttl=5.0)
    clock.wait(4.0)
    assert store.get("k") == b"v"
    clock.wait(2.0)
    assert store.get("k") is None


def test_a_policy_with_a_short_ttl_leaves_anothers_original_kept_forever(
    clock: Clock, tmp_path: Path
) -> None:
    """B's put (ttl 1 s) of the original A (no TTL) keeps made A's entry expire."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    rules: dict[str, Any] = {
        "recall": True,
        "context_window": 1_000_000,
        "tools": {"read_file": {"max_tokens": 60}},
    }
    read = "\n".join(f"shared config line {i}" for i in range(400))
    a = ctxwin.load_policy({**rules, "store": url})
    b = ctxwin.load_policy({**rules, "store": {"url": url, "ttl": 1}})
    rounds = [[("read_file", {"p": "cfg"}, read)]]
    (handle,) = re.findall(r"r-[0-9a-f]{16}", str(a.apply(agent_body(rounds)).request))
    b.apply(agent_body(rounds))
    clock.wait(5.0)
    assert ctxwin.load_policy({**rules, "store": url}).recall(handle).text == read


def test_a_redis_user_without_scripting_rights_still_keeps_originals_with_a_ttl(
    redis_url: str,
) -> None:
    """``+@read +@write`` was all ctxwin needed; the script that keeps the longer life was
    refused (NOPERM) at every put, so no original was kept and every request quoted none.
    Refused once, the put keeps the longer life in two commands."""
    redis = pytest.importorskip("redis")
    from ctxwin.stores.redis import RedisStore

    admin = redis.Redis.from_url(redis_url, socket_timeout=5)
    user, prefix = f"app-{uuid.uuid4().hex[:8]}", f"ctxwin:test-{uuid.uuid4().hex}:"
    admin.execute_command(
        "ACL", "SETUSER", user, "on", ">pw", f"~{prefix}*", "+@read", "+@write", "+@connection"
    )
    try:
        url = redis_url.replace("redis://", f"redis://{user}:pw@", 1)
        store = RedisStore(url, ttl=60.0, prefix=prefix)
        admin.set(prefix + "kept", b"forever")  # another policy's, without a TTL
        store.put("kept", b"again")  # the TTL of 60 s must not shorten a life without end
        store.put("k", b"v", ttl=600.0)
        store.put("k", b"w")  # nor a longer one
        store.put("new", b"n")
        assert (store.get("kept"), store.get("k"), store.get("new")) == (b"again", b"w", b"n")
        assert admin.pttl(prefix + "kept") == -1
        assert admin.pttl(prefix + "k") > 500_000
        assert 0 < admin.pttl(prefix + "new") <= 60_000
        store.close()
    finally:
        admin.execute_command("ACL", "DELUSER", user)
        for key in admin.scan_iter(match=f"{prefix}*"):
            admin.delete(key)
        admin.close()


def test_a_key_the_user_may_not_write_is_an_error_not_a_refused_script(redis_url: str) -> None:
    """NOPERM names a key as well as a command: a refused key turned scripting off for good,
    every later put losing the one-step keep of the longer life."""
    redis = pytest.importorskip("redis")
    from ctxwin.stores.redis import RedisStore

    admin = redis.Redis.from_url(redis_url, socket_timeout=5)
    user, prefix = f"app-{uuid.uuid4().hex[:8]}", f"ctxwin:test-{uuid.uuid4().hex}:"
    admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~elsewhere:*", "+@all")
    try:
        store = RedisStore(redis_url.replace("redis://", f"redis://{user}:pw@", 1), ttl=60.0)
        with pytest.raises(ctxwin.StoreError, match="put failed: NoPermissionError"):
            store.put(prefix + "k", b"v")
        assert store._scripted
        store.close()
    finally:
        admin.execute_command("ACL", "DELUSER", user)
        admin.close()
