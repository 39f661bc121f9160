"""The SQLite store on real files: round trip, expiry, limits, several processes, faults."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from ctxwin import StoreError
from ctxwin.stores import Store, open_store
from ctxwin.stores import sqlite as sqlite_module
from ctxwin.stores.sqlite import SQLiteStore, sqlite_path
from tests.stores.workers import put_many, read_many


def url_of(path: Path) -> str:
    return f"sqlite:///{path}"  # an absolute path: sqlite:////tmp/...


@pytest.fixture
def url(tmp_path: Path) -> str:
    return url_of(tmp_path / "store.db")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_700_000_000.0]
    monkeypatch.setattr(sqlite_module, "_now", lambda: now[0])
    return now


def test_values_round_trip_through_the_file(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore)
    assert isinstance(store, Store)
    store.put("k", b"\x00binary\xff")
    store.put("k2", b"")
    assert store.get("k") == b"\x00binary\xff"
    assert store.get("k2") == b""
    assert store.get("missing") is None
    store.put("k", b"replaced")
    assert store.get("k") == b"replaced"
    store.close()


def test_the_url_names_a_relative_or_absolute_file_or_memory() -> None:
    assert sqlite_path("sqlite:///cache/a.db") == "cache/a.db"
    assert sqlite_path("sqlite:////var/lib/a.db") == "/var/lib/a.db"
    assert sqlite_path("sqlite:///:memory:") == ":memory:"
    with pytest.raises(StoreError, match="not a SQLite store URL") as e:
        sqlite_path("sqlite://")
    assert e.value.operation == "open"


def test_a_relative_path_is_from_the_working_folder_and_its_folders_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///cache/deep/ctxwin.db")
    store.put("k", b"v")
    store.close()
    assert (tmp_path / "cache" / "deep" / "ctxwin.db").is_file()


def test_the_file_is_in_wal_mode(tmp_path: Path) -> None:
    SQLiteStore(url_of(tmp_path / "s.db")).close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_an_in_memory_database_works_across_threads() -> None:
    store = open_store("sqlite:///:memory:")
    threads = [
        threading.Thread(target=lambda i=i: store.put(f"t{i}", bytes([i]) * 10)) for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [store.get(f"t{i}") for i in range(8)] == [bytes([i]) * 10 for i in range(8)]


def test_a_value_expires_after_the_store_ttl_or_its_own(url: str, clock: list[float]) -> None:
    store = SQLiteStore(url, ttl=60)
    store.put("default", b"a")
    store.put("own", b"b", ttl=3600)
    clock[0] += 59.5
    assert store.get("default") == b"a"
    clock[0] += 0.5
    assert store.get("default") is None
    assert store.get("own") == b"b"


def test_purge_deletes_the_expired_rows_only(url: str, clock: list[float]) -> None:
    store = SQLiteStore(url)
    store.put("short", b"a", ttl=1)
    store.put("forever", b"b")
    clock[0] += 2
    assert store.purge() == 1
    assert store.purge() == 0
    assert store.get("forever") == b"b"


def test_puts_sweep_the_expired_rows_now_and_then(url: str, clock: list[float]) -> None:
    store = SQLiteStore(url)
    store.put("old", b"a", ttl=1)
    clock[0] += 2
    for i in range(sqlite_module.PURGE_EVERY):
        store.put(f"k{i}", b"x")
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        assert conn.execute("SELECT count(*) FROM ctxwin_store WHERE key = 'old'").fetchone() == (
            0,
        )


def test_a_value_over_max_bytes_is_refused(url: str) -> None:
    store = SQLiteStore(url, max_bytes=10)
    store.put("k", b"0123456789")
    with pytest.raises(StoreError, match="11 bytes is over the store's limit of 10") as e:
        store.put("k", b"0123456789A")
    assert (e.value.operation, e.value.url) == ("put", url)
    assert store.get("k") == b"0123456789"


def test_several_processes_write_one_file_at_once(url: str) -> None:
    """4 processes x 200 puts on one new file: no write lost, none failed on a lock."""
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        done = pool.starmap(put_many, [(url, w, 200) for w in range(4)])
    assert done == [200] * 4
    store = SQLiteStore(url)
    for w in range(4):
        for i in range(200):
            assert store.get(f"w{w}-{i}") == f"value {w} {i}".encode() * 8


def test_a_new_process_reads_what_an_earlier_one_wrote(url: str) -> None:
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=put_many, args=(url, 7, 3))
    writer.start()
    writer.join()
    assert writer.exitcode == 0
    with context.Pool(1) as pool:
        got = pool.apply(read_many, (url, ["w7-0", "w7-2", "w7-3"]))
    assert got == [b"value 7 0" * 8, b"value 7 2" * 8, None]


def test_a_store_reopens_after_close(url: str) -> None:
    store = SQLiteStore(url)
    store.put("k", b"v")
    store.close()
    assert store.get("k") == b"v"
    store.close()


def test_a_file_that_is_not_a_database_is_a_store_error_at_open(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not a SQLite database, just some text " * 100)
    with pytest.raises(StoreError, match="open failed: DatabaseError: file is not a database") as e:
        open_store(url_of(path))
    assert e.value.operation == "open"
    assert e.value.url == url_of(path)
    assert isinstance(e.value.__cause__, sqlite3.DatabaseError)


def test_a_database_with_another_table_shape_is_a_store_error_at_open(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE ctxwin_store (name TEXT)")
    with pytest.raises(StoreError, match="open failed: OperationalError: no such column") as e:
        open_store(url_of(path))
    assert e.value.operation == "open"


def test_a_table_dropped_under_an_open_store_is_a_store_error_at_use(url: str) -> None:
    store = SQLiteStore(url)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("DROP TABLE ctxwin_store")
    with pytest.raises(StoreError, match="get failed: OperationalError: no such table") as e:
        store.get("k")
    assert e.value.operation == "get"
    with pytest.raises(StoreError, match="put failed: OperationalError: no such table"):
        store.put("k", b"v")


def test_a_value_that_is_not_bytes_is_a_store_error(url: str) -> None:
    SQLiteStore(url).close()
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("INSERT INTO ctxwin_store VALUES ('k', 'text, not a blob', NULL)")
    with pytest.raises(StoreError, match="the value under 'k' is str, not bytes") as e:
        SQLiteStore(url).get("k")
    assert e.value.operation == "get"


def test_a_path_under_a_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(StoreError, match="open failed") as e:
        open_store(url_of(tmp_path / "a_file" / "sub" / "store.db"))
    assert e.value.operation == "open"
    assert isinstance(e.value.__cause__, OSError)


def test_a_folder_at_the_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="open failed: OperationalError") as e:
        open_store(url_of(tmp_path))
    assert isinstance(e.value.__cause__, sqlite3.OperationalError)


def test_a_writer_holding_the_lock_past_the_timeout_is_a_store_error(url: str) -> None:
    """Another connection's open write transaction: the put waits out its busy timeout."""
    store = SQLiteStore(url, timeout=0.05)
    other = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="put failed: OperationalError: database is locked"):
            store.put("k", b"v")
        assert store.get("k") is None  # readers do not wait in WAL mode
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.put("k", b"v")
    assert store.get("k") == b"v"


def test_a_get_answers_while_a_put_of_this_process_waits_for_the_file(url: str) -> None:
    """WAL readers never wait for a writer: a get queued behind this process's put (one
    connection behind one lock) while that put waited for another process's write lock,
    and failed "get waited over 0.5s for another thread", starting the shelf's cool-off."""
    store = SQLiteStore(url, timeout=0.5)
    store.put("k", b"v")
    other = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    other.execute("INSERT INTO ctxwin_store VALUES ('busy', x'00', NULL)")
    try:
        with store._writer.lock:  # another thread's put, waiting for the other process
            assert store.get("k") == b"v"
            assert store.get("busy") is None  # not committed yet
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.close()


def test_a_call_that_waited_for_another_thread_waits_only_the_rest_of_its_timeout(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One deadline per call: a put that got the thread lock late then waited its whole
    ``timeout`` again in SQLite's busy wait, twice the bound a failed call promises."""
    store = SQLiteStore(url, timeout=5.0)
    ticks = iter([100.0])  # the call starts at 100.0; the lock is taken at 104.875
    monkeypatch.setattr(sqlite_module, "_clock", lambda: next(ticks, 104.875))
    other = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="put failed: OperationalError: database is locked"):
            store.put("k", b"v")
    finally:
        other.execute("ROLLBACK")
        other.close()
    writer = store._writer.conn
    assert writer is not None
    assert writer.execute("PRAGMA busy_timeout").fetchone() == (125,)
    store.put("k", b"v")  # a call that waits for no thread has its whole timeout again
    assert writer.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    store.close()


def test_close_closes_the_connections_of_reads_and_writes(url: str) -> None:
    store = SQLiteStore(url)
    store.put("k", b"v")
    assert store.get("k") == b"v"
    opened = [store._writer.conn, store._reader.conn]
    assert None not in opened
    assert opened[0] is not opened[1]
    store.close()
    for conn in opened:
        assert conn is not None
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")
    assert store.get("k") == b"v"  # opened again


def _fork_child(url: str, store: SQLiteStore) -> None:
    store.put("from the child", b"c")
    assert store.get("from the parent") == b"p"


def test_a_forked_child_uses_a_connection_of_its_own(url: str) -> None:
    store = SQLiteStore(url)
    store.put("from the parent", b"p")
    assert store.get("from the parent") == b"p"  # the connections of reads and writes open
    child = multiprocessing.get_context("fork").Process(target=_fork_child, args=(url, store))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert store.get("from the child") == b"c"
    store.put("after", b"a")
    assert store.get("after") == b"a"


def test_a_database_damaged_after_its_first_page_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    store = SQLiteStore(url_of(path))
    for i in range(200):
        store.put(f"k{i}", bytes([i % 256]) * 500)
    store.close()
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="malformed") as e:
        SQLiteStore(url_of(path)).get("k1")
    assert isinstance(e.value.__cause__, sqlite3.DatabaseError)


def test_a_thread_holding_the_store_past_the_timeout_is_a_store_error(url: str) -> None:
    store = SQLiteStore(url, timeout=0.05)
    stuck = r"put waited over 0\.05s for another thread"
    with store._writer.lock, pytest.raises(StoreError, match=stuck) as e:  # another's call
        store.put("k", b"v")
    assert e.value.operation == "put"
    stuck = r"get waited over 0\.05s for another thread"
    with store._reader.lock, pytest.raises(StoreError, match=stuck) as e:
        store.get("k")
    assert e.value.operation == "get"
    store.put("k", b"v")
    assert store.get("k") == b"v"


def test_a_relative_path_stays_the_same_file_when_the_working_folder_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store reconnects after ``close()`` and in a forked child: it reopened the
    relative path from the new working folder, a new empty file, and every original kept
    before was "unknown"."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    store = SQLiteStore("sqlite:///store.db")
    store.put("k", b"v")
    store.close()
    monkeypatch.chdir(tmp_path / "b")
    assert store.get("k") == b"v"
    assert not (tmp_path / "b" / "store.db").exists()


def test_a_path_from_the_home_folder_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///~/x.db`` made a folder named ``~`` in the working folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///~/cache/ctxwin.db")
    store.put("k", b"v")
    store.close()
    assert (tmp_path / "home" / "cache" / "ctxwin.db").is_file()
    assert not (tmp_path / "~").exists()
    assert sqlite_path("sqlite:///~/cache/ctxwin.db") == str(tmp_path / "home/cache/ctxwin.db")


def test_a_full_disk_is_a_store_error_and_apply_quotes_no_handle(url: str) -> None:
    """SQLITE_FULL (here a page limit on the store's own connection, as a full disk
    answers): a StoreError, and the request goes out with placeholders that quote nothing."""
    import json

    import ctxwin
    from ctxwin.steps._shelf import HANDLE_RE
    from ctxwin.testing import agent_body

    store = SQLiteStore(url)
    store.put("small", b"v")
    assert store._writer.conn is not None
    store._writer.conn.execute("PRAGMA max_page_count = 3")
    with pytest.raises(StoreError, match="put failed: OperationalError: database or disk is full"):
        store.put("big", b"z" * 100_000)
    assert store.get("small") == b"v"  # what was there stays readable
    rules = {"context_window": 8000, "recall": True, "window": {"keep_rounds": 1}}
    text = "\n".join(f"line {i}: " + "x" * 60 for i in range(300))
    reads = [[("read_file", {"path": f"f{n}"}, f"{text}\n{n}")] for n in range(4)]
    out = ctxwin.load_policy(rules, store=store).apply(agent_body(reads))
    assert ctxwin.check(out.request) == []
    assert not HANDLE_RE.findall(json.dumps(out.request))
    assert [n for n in out.report.notes if "database or disk is full" in n]


def test_threads_share_one_store_on_a_file(url: str) -> None:
    store = SQLiteStore(url, timeout=5.0)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(50):
                store.put(f"t{t}-{i}", f"{t} {i}".encode())
                assert store.get(f"t{t}-{i}") == f"{t} {i}".encode()
        except BaseException as e:  # handed to the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert SQLiteStore(url).get("t7-49") == b"7 49"
