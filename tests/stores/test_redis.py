"""The Redis store against a real ``redis-server``: values, expiry, limits, processes, faults."""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import StoreError
from ctxwin.stores import Store, open_store
from ctxwin.stores.redis import PREFIX, RedisStore
from tests.stores.conftest import RedisServer, free_port, start_redis
from tests.stores.workers import put_many, read_many

pytestmark = pytest.mark.redis
redis = pytest.importorskip("redis")

GUARD = 30.0
"""Seconds after which a store call counts as hung (the store's own bound is far below)."""


def raw(url: str) -> Any:
    return redis.Redis.from_url(url, socket_timeout=5)


def unique() -> str:
    return f"test-{uuid.uuid4().hex}"


def finishes(call: Callable[[], object]) -> BaseException | None:
    """The exception ``call`` raised (None if none), after checking it did not hang."""
    caught: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as e:  # handed to the test
            caught[0] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert not thread.is_alive(), f"the store call still runs after {GUARD}s"
    return caught[0]


def test_values_round_trip_under_the_ctxwin_prefix(redis_url: str) -> None:
    store = open_store(redis_url)
    assert isinstance(store, RedisStore)
    assert isinstance(store, Store)
    key = unique()
    store.put(key, b"\x00binary\xff")
    assert store.get(key) == b"\x00binary\xff"
    assert raw(redis_url).get(PREFIX + key) == b"\x00binary\xff"
    assert raw(redis_url).get(key) is None
    store.put(key, b"replaced")
    assert store.get(key) == b"replaced"
    assert store.get(unique()) is None
    store.close()


def test_a_ttl_is_set_on_the_server_in_milliseconds(redis_url: str) -> None:
    store = RedisStore(redis_url, ttl=60)
    default, own, forever = unique(), unique(), unique()
    store.put(default, b"a")
    store.put(own, b"b", ttl=0.25)
    RedisStore(redis_url).put(forever, b"c")
    client = raw(redis_url)
    assert 59_000 < client.pttl(PREFIX + default) <= 60_000
    assert 0 < client.pttl(PREFIX + own) <= 250
    assert client.pttl(PREFIX + forever) == -1  # no expiry


@pytest.mark.parametrize("ttl", [10**14, 10**15])
def test_a_ttl_up_to_its_bound_is_set_on_the_server(redis_url: str, ttl: int) -> None:
    """The script handed SET a PX of 1e17 ms as Lua writes a number ("1e+17"), which Redis
    refused: from a TTL of 1e14 s up every put failed (the bound is 10**15 s), and a longer
    life a key had left was written the same way."""
    store = RedisStore(redis_url, ttl=ttl)
    fresh, longer = unique(), unique()
    client = raw(redis_url)
    client.set(PREFIX + longer, b"another policy's", px=10**18 + 12_345)
    store.put(fresh, b"v")
    store.put(longer, b"w")
    assert (store.get(fresh), store.get(longer)) == (b"v", b"w")
    assert ttl * 1000 - 60_000 < client.pttl(PREFIX + fresh) <= ttl * 1000
    assert 10**18 + 12_345 - 60_000 < client.pttl(PREFIX + longer) <= 10**18 + 12_345


def test_a_value_is_gone_after_its_ttl(redis_url: str) -> None:
    store = RedisStore(redis_url)
    key = unique()
    store.put(key, b"v", ttl=0.02)
    time.sleep(0.1)
    assert store.get(key) is None


def test_a_ttl_of_zero_removes_the_value(redis_url: str) -> None:
    store = RedisStore(redis_url)
    key = unique()
    store.put(key, b"v")
    store.put(key, b"w", ttl=0)
    assert store.get(key) is None


def test_a_value_over_max_bytes_is_refused(redis_url: str) -> None:
    store = RedisStore(redis_url, max_bytes=10)
    key = unique()
    store.put(key, b"0123456789")
    with pytest.raises(StoreError, match="11 bytes is over the store's limit of 10") as e:
        store.put(key, b"0123456789A")
    assert e.value.operation == "put"
    assert store.get(key) == b"0123456789"


def test_two_processes_share_values(redis_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    prefix = unique()
    writer = context.Process(target=put_many, args=(redis_url, 1, 20, prefix))
    writer.start()
    writer.join()
    assert writer.exitcode == 0
    store = RedisStore(redis_url)
    assert store.get(f"{prefix}w1-19") == b"value 1 19" * 8
    mine = unique()
    store.put(mine, b"from the parent")
    with context.Pool(1) as pool:
        got = pool.apply(read_many, (redis_url, [mine, f"{prefix}w1-0", unique()]))
    assert got == [b"from the parent", b"value 1 0" * 8, None]


def test_a_password_is_masked_in_the_url_and_the_errors(own_redis: RedisServer) -> None:
    raw(own_redis.url).config_set("requirepass", "right-pw")
    host = f"127.0.0.1:{own_redis.port}/0"
    good = open_store(f"redis://:right-pw@{host}")
    assert good.url == f"redis://:***@{host}"
    good.put("k", b"v")
    assert good.get("k") == b"v"
    wrong = open_store(f"redis://:s3cr3t-pw@{host}")
    error = finishes(lambda: wrong.get("k"))
    assert isinstance(error, StoreError), error
    assert "s3cr3t-pw" not in str(error)
    assert "right-pw" not in str(error)
    assert error.url == f"redis://:***@{host}"
    assert isinstance(error.__cause__, redis.AuthenticationError)


def test_a_killed_server_is_a_store_error_at_the_next_call(own_redis: RedisServer) -> None:
    store = RedisStore(own_redis.url)
    store.put("k", b"v")
    assert store.get("k") == b"v"
    own_redis.kill()
    for operation, call in (("get", lambda: store.get("k")), ("put", lambda: store.put("k", b"v"))):
        error = finishes(call)
        assert isinstance(error, StoreError), error
        assert error.operation == operation
        assert isinstance(error.__cause__, redis.ConnectionError)
        assert f"{operation} failed: ConnectionError" in str(error)


def test_a_server_that_stops_answering_is_a_store_error_after_the_timeout(
    own_redis: RedisServer,
) -> None:
    """A frozen server (SIGSTOP): the socket timeout ends the wait, nothing retries."""
    store = RedisStore(own_redis.url, timeout=0.2)
    store.put("k", b"v")
    own_redis.pause()
    try:
        error = finishes(lambda: store.get("k"))
    finally:
        own_redis.resume()
    assert isinstance(error, StoreError), error
    assert error.operation == "get"
    assert isinstance(error.__cause__, redis.TimeoutError)
    assert store.get("k") == b"v"  # the server back: the store works again


def test_an_unreachable_port_is_a_store_error_at_get_and_put_not_at_open() -> None:
    store = open_store(f"redis://127.0.0.1:{free_port()}/0")
    for operation, call in (("get", lambda: store.get("k")), ("put", lambda: store.put("k", b"v"))):
        error = finishes(call)
        assert isinstance(error, StoreError), error
        assert error.operation == operation
        assert isinstance(error.__cause__, redis.ConnectionError)


def test_a_value_of_another_type_at_the_key_is_a_store_error(redis_url: str) -> None:
    key = unique()
    raw(redis_url).rpush(PREFIX + key, b"a", b"b")
    store = RedisStore(redis_url)
    with pytest.raises(StoreError, match="get failed: ResponseError: WRONGTYPE") as e:
        store.get(key)
    assert e.value.operation == "get"
    assert isinstance(e.value.__cause__, redis.ResponseError)
    store.put(key, b"v")  # SET replaces a key of any type
    assert store.get(key) == b"v"


def test_a_malformed_url_is_a_store_error_at_open() -> None:
    with pytest.raises(StoreError, match="cannot open") as e:
        open_store("redis://127.0.0.1:notaport/0")
    assert e.value.operation == "open"


def test_a_unix_socket_url_opens_a_redis_store() -> None:
    """redis-py's ``unix:///path/to/redis.sock?db=0`` was refused as an unknown store."""
    folder = Path(tempfile.mkdtemp(prefix="ctxw", dir="/tmp"))  # a socket path is <= 107 bytes
    socket_path = folder / "redis.sock"
    server = start_redis(folder, unixsocket=socket_path)
    try:
        url = f"unix://{socket_path}?db=0"
        store = open_store(url, timeout=2.0)
        assert isinstance(store, RedisStore)
        store.put("k", b"over the socket")
        assert store.get("k") == b"over the socket"
        assert raw(server.url).get(PREFIX + "k") == b"over the socket"  # one server
        policy = ctxwin.load_policy({"recall": True, "store": url})
        assert policy.shelf.url == url
        assert policy.shelf.store().get("k") == b"over the socket"
        store.close()
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_unix_socket_nothing_listens_on_is_a_store_error(tmp_path: Path) -> None:
    store = open_store(f"unix://{tmp_path}/absent.sock", timeout=0.3)
    error = finishes(lambda: store.get("k"))
    assert isinstance(error, StoreError), error
    assert error.operation == "get"
    assert isinstance(error.__cause__, redis.ConnectionError)


def test_a_unix_socket_url_masks_its_password() -> None:
    store = open_store("unix://:hunter2@/tmp/ctxwin-none.sock?db=0")
    assert store.url == "unix://:***@/tmp/ctxwin-none.sock?db=0"
    error = finishes(lambda: store.get("k"))
    assert isinstance(error, StoreError), error
    assert "hunter2" not in str(error)


def test_threads_and_tasks_share_one_store(redis_url: str) -> None:
    """One client, its connection pool shared by threads (and by asyncio tasks, which
    ``aapply`` runs on worker threads)."""
    import asyncio

    store = RedisStore(redis_url, timeout=5.0)
    prefix = unique()
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(50):
                store.put(f"{prefix}t{t}-{i}", f"{t} {i}".encode())
                assert store.get(f"{prefix}t{t}-{i}") == f"{t} {i}".encode()
        except BaseException as e:  # handed to the test
            errors.append(e)

    async def tasks() -> None:
        await asyncio.gather(*(asyncio.to_thread(work, t) for t in range(8)))

    asyncio.run(tasks())
    assert errors == []
    assert RedisStore(redis_url).get(f"{prefix}t7-49") == b"7 49"
