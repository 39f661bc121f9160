"""A store that is up but will not write (a Redis at ``maxmemory``, a full disk) refuses
values, and is not treated as down; recall answers what the policy holds in memory when
the store fails; a SQLite file deleted between requests that store nothing is noticed by
the next request, which puts back what it quotes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import StoreError
from ctxwin.steps._shelf import CLEARED_FULL, HANDLE_RE, KEPT_FULL, KEPT_REFUSED, handle_of
from ctxwin.stores import MemoryStore, open_store
from ctxwin.stores.redis import RedisStore
from ctxwin.stores.sqlite import SQLiteStore
from ctxwin.testing import agent_body
from tests.stores.conftest import RedisServer

CAPPED = {
    "context_window": 8000,
    "recall": True,
    "tools": {"read_file": {"max_tokens": 200}},
}
TEXTS = ["\n".join(f"{k}:{i} value" for i in range(300)) for k in range(4)]
READS = [[("read_file", {"path": f"t{k}"}, text)] for k, text in enumerate(TEXTS)]


def handles(body: object) -> set[str]:
    return set(HANDLE_RE.findall(json.dumps(body)))


def delete(path: Path) -> None:
    """A cache cleaner emptying the store's folder."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# ------------------------------------------------------------- a SQLite file deleted


def test_a_sqlite_file_deleted_between_requests_that_store_nothing_is_put_back_at_once(
    tmp_path: Path,
) -> None:
    """The next requests (no new result: their edits all memoized) made no store call, so
    the deletion went unnoticed and another process's recall said "unknown handle" until a
    later request happened to store something new."""
    path = tmp_path / "store.db"
    url = f"sqlite:///{path}"
    policy = ctxwin.load_policy({**CAPPED, "store": url})
    body = agent_body(READS[:3])
    quoted = handles(policy.apply(body).request)
    assert quoted
    delete(path)
    body = {**body, "messages": [*body["messages"], {"role": "user", "content": "go on"}]}
    out = policy.apply(body)
    assert handles(out.request) == quoted
    assert out.report.notes == ()
    other = ctxwin.load_policy({**CAPPED, "store": url})  # another process on the file
    assert [h for h in sorted(quoted) if other.recall(h).is_error] == []


def test_a_sqlite_file_deleted_while_the_store_was_closed_counts_as_reopened(
    tmp_path: Path,
) -> None:
    """After ``close()`` the store connected to the new, empty file without counting it, so
    the shelf never learned that what it put was gone."""
    path = tmp_path / "store.db"
    store = SQLiteStore(f"sqlite:///{path}")
    store.put("k", b"v")
    store.close()
    delete(path)
    assert store.get("k") is None
    assert store.reopened == 1
    store.put("k", b"w")
    assert (store.reopen_if_replaced(), store.get("k")) == (1, b"w")
    store.close()


def test_reopen_if_replaced_opens_a_deleted_file_again_and_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SQLiteStore(f"sqlite:///{path}")
    assert store.reopen_if_replaced() == 0
    delete(path)
    assert store.reopen_if_replaced() == 1
    assert path.exists()  # made anew, for the other processes to read
    assert store.reopen_if_replaced() == 1
    store.close()


# ------------------------------------------------------------- a full disk


def full_sqlite(path: Path) -> SQLiteStore:
    """A SQLite store that answers reads and refuses writes as a full disk does
    (SQLITE_FULL, here a page limit on its connection)."""
    store = SQLiteStore(f"sqlite:///{path}")
    store.put("small", b"v")
    assert store._writer.conn is not None
    store._writer.conn.execute("PRAGMA max_page_count = 3")
    return store


def test_a_full_sqlite_disk_refuses_a_write_and_answers_reads(tmp_path: Path) -> None:
    store = full_sqlite(tmp_path / "store.db")
    with pytest.raises(StoreError, match="database or disk is full") as e:
        store.put("big", b"z" * 100_000)
    assert e.value.refused
    assert store.get("small") == b"v"


def test_a_full_sqlite_disk_is_no_cool_off_and_its_edits_say_full(tmp_path: Path) -> None:
    """Each write refused at once costs no timeout: the store stays in use for reads (a
    recall of what another policy put), and each edit says why it quotes no handle."""
    store = full_sqlite(tmp_path / "store.db")
    store.put("recall:" + handle_of(TEXTS[3]), TEXTS[3].encode())
    policy = ctxwin.load_policy(CAPPED, store=store)
    out = policy.apply(agent_body(READS[:2]))
    assert not handles(out.request)
    assert [e.fallback for e in out.report.edits] == [KEPT_FULL, KEPT_FULL]
    assert [n for n in out.report.notes if "refused a value (keeping an original)" in n]
    assert not [n for n in out.report.notes if "failed" in n.split(":")[0]]
    assert policy.recall(handle_of(TEXTS[3])).text == TEXTS[3]


def test_a_clearing_of_a_capped_result_refused_by_a_full_disk_says_full(tmp_path: Path) -> None:
    """The window's clearing of a result the cap could not keep said store_down, though
    the store was up and answering reads, only full."""
    window = {"keep_rounds": 1, "strategy": "threshold", "trigger": 0.1, "target": 0.05}
    policy = ctxwin.load_policy({**CAPPED, "window": window}, store=full_sqlite(tmp_path / "s.db"))
    out = policy.apply(agent_body(READS))
    capped = {e.call_id: e.fallback for e in out.report.edits if e.step == "cap"}
    cleared = {e.call_id: e.fallback for e in out.report.edits if e.step == "window"}
    refused = [c for c in cleared if capped.get(c) == KEPT_FULL]
    assert refused  # the first fitted before the disk was full: its clearing quotes a handle
    assert [cleared[c] for c in refused] == [CLEARED_FULL] * len(refused)


# ------------------------------------------------------------- recall from memory


class Breakable(MemoryStore):
    """A store in this process's memory that goes down (every call a StoreError)."""

    url = "breakable://"
    down = False

    def get(self, key: str) -> bytes | None:
        if self.down:
            raise StoreError(f"{self.url}: get failed: timed out", url=self.url, operation="get")
        return super().get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        if self.down:
            raise StoreError(f"{self.url}: put failed: timed out", url=self.url, operation="put")
        super().put(key, value, ttl=ttl)


def test_recall_answers_an_original_held_in_memory_while_the_store_is_down() -> None:
    """A failed call (and the cool-off after it) answered "the store is unavailable" even
    for an original the policy had just put and still held."""
    store = Breakable()
    policy = ctxwin.load_policy(CAPPED, store=store)
    assert handles(policy.apply(agent_body(READS[:2])).request)
    store.down = True
    assert policy.recall(handle_of(TEXTS[0])).text == TEXTS[0]  # the failing call
    assert policy.recall(handle_of(TEXTS[1])).text == TEXTS[1]  # in the cool-off
    unknown = policy.recall(handle_of("kept by another policy"))
    assert unknown.is_error
    assert unknown.text.startswith("recall: the store is unavailable")
    notes = policy.apply(agent_body(READS[:2])).report.notes
    assert [n for n in notes if "failed (recalling r-" in n]


def test_an_original_over_max_bytes_still_says_over_max_bytes() -> None:
    policy = ctxwin.load_policy({**CAPPED, "store": {"url": "memory", "max_bytes": 1000}})
    out = policy.apply(agent_body(READS[:1]))
    assert [e.fallback for e in out.report.edits] == [KEPT_REFUSED]
    assert [n for n in out.report.notes if "over its size limit" in n]


# ------------------------------------------------------------- a Redis at maxmemory


def fill(server: RedisServer) -> None:
    """``maxmemory`` below what the server uses, under ``noeviction``: every write is
    refused (OOM), reads are answered."""
    redis = pytest.importorskip("redis")
    client: Any = redis.Redis(port=server.port, socket_timeout=5)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        client.set("probe", b"x")
    client.close()


@pytest.mark.redis
def test_a_redis_at_maxmemory_refuses_a_put_and_answers_gets(own_redis: RedisServer) -> None:
    store = open_store(own_redis.url)
    store.put("k", b"v")
    fill(own_redis)
    with pytest.raises(StoreError, match="OutOfMemoryError") as e:
        store.put("other", b"w")
    assert e.value.refused
    assert store.get("k") == b"v"
    store.close()


@pytest.mark.redis
def test_a_redis_at_maxmemory_refuses_a_put_with_a_ttl(own_redis: RedisServer) -> None:
    """A put with a TTL runs a script (never shortening the key's life): the server's OOM
    from inside it is a refusal too, not a failure."""
    store = open_store(own_redis.url, ttl=60)
    store.put("k", b"v")
    fill(own_redis)
    with pytest.raises(StoreError, match="OutOfMemoryError") as e:
        store.put("k", b"w")
    assert e.value.refused
    assert store.get("k") == b"v"
    store.close()


@pytest.mark.redis
def test_a_redis_at_maxmemory_is_no_outage_for_recall(own_redis: RedisServer) -> None:
    """Its refused write started the 5 s cool-off, which turned away every recall, even of
    originals the server still answers (here one another worker put)."""
    worker = ctxwin.load_policy({**CAPPED, "store": own_redis.url})
    assert handles(worker.apply(agent_body(READS[3:])).request)
    policy = ctxwin.load_policy({**CAPPED, "store": own_redis.url})
    assert handles(policy.apply(agent_body(READS[:2])).request)
    fill(own_redis)
    out = policy.apply(agent_body(READS))
    fallbacks = [e.fallback for e in out.report.edits if e.fallback]
    assert fallbacks
    assert set(fallbacks) == {KEPT_FULL}
    notes = " ".join(out.report.notes)
    assert "refused a value (keeping an original)" in notes
    assert "OutOfMemoryError" in notes
    assert policy.recall(handle_of(TEXTS[3])).text == TEXTS[3]  # read from the server
    assert policy.recall(handle_of(TEXTS[0])).text == TEXTS[0]


@pytest.mark.parametrize(
    "reply",
    [
        ("OutOfMemoryError", "command not allowed when used memory > 'maxmemory'."),
        ("ResponseError", "OOM command not allowed when used memory > 'maxmemory'."),
    ],
    ids=["OutOfMemoryError", "an older client's ResponseError"],
)
def test_the_redis_store_reads_an_oom_reply_as_a_refusal(reply: tuple[str, str]) -> None:
    """Without a server: the client's exception for the server's ``OOM`` reply is a
    refusal; another error reply is a failure."""
    redis = pytest.importorskip("redis")
    store = RedisStore("redis://127.0.0.1:1/0")
    for error, refused in [
        (getattr(redis.exceptions, reply[0])(reply[1]), True),
        (redis.exceptions.ResponseError("WRONGTYPE Operation against a key"), False),
    ]:

        def answer(*args: object, error: BaseException = error, **kwargs: object) -> None:
            raise error

        store._client.set = answer
        with pytest.raises(StoreError, match=reply[1][:10] if refused else "WRONGTYPE") as e:
            store.put("k", b"v")
        assert e.value.refused is refused
