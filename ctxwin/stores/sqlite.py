"""The SQLite store: one file, shared by the processes of one machine.

``sqlite:///relative/path.db`` (from the working folder when the store opens),
``sqlite:////absolute/path.db``, ``sqlite:///~/path.db`` (from the home folder),
``sqlite:///:memory:`` (this process only). The file is in WAL mode, and reads have a
connection of their own, so a get never waits for a writer, another process's or this
one's. A call waits at most ``timeout`` seconds in all: for another thread of this process
on its connection, then for another connection's write lock (SQLite's busy timeout, set to
what is left). Expiry times are wall-clock (``time.time``), the one clock that processes
share.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ctxwin._exceptions import StoreError
from ctxwin.stores._base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    SQLITE_FORM,
    check_limits,
    check_size,
    check_value,
    mask_url,
    sqlite_file,
)

__all__ = ["SQLiteStore", "sqlite_path"]

T = TypeVar("T")

TABLE = "ctxwin_store"
PURGE_EVERY = 256
"""Puts between two sweeps of the expired rows (a get already ignores them)."""

_INHERITED: list[sqlite3.Connection] = []
"""Connections a forked child inherited from its parent, kept from being closed (SQLite's
advice: a connection must not be used or closed across ``fork``)."""

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_expires ON {TABLE} (expires)",
)


def _now() -> float:
    return time.time()


def _clock() -> float:
    """The clock of the calls' deadlines."""
    return time.monotonic()


@dataclass(eq=False)
class _Line:
    """One connection of a store and the lock that keeps it to one thread at a time."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    conn: sqlite3.Connection | None = None
    file: tuple[int, int] | None = None
    """The file's device and inode when this connection opened it."""
    busy: int = -1
    """The busy timeout (ms) last set on the connection (-1: none yet)."""


def _file_id(path: str) -> tuple[int, int] | None:
    """The device and inode of ``path`` (None: there is no such file)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _full(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's SQLITE_FULL (a full disk, a page limit): the file
    refuses writes and still answers reads, so a put it refuses is a refusal of that value,
    not the store being down (a file that cannot be opened for it is down)."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    name = getattr(error, "sqlite_errorname", None)  # Python 3.11+
    return name == "SQLITE_FULL" if name is not None else "is full" in str(error)


def _opened(conn: sqlite3.Connection) -> None:
    """Nothing more than the connection (:meth:`SQLiteStore.reopen_if_replaced`)."""


def sqlite_path(url: str) -> str:
    """The file a ``sqlite:///`` URL names (``:memory:`` for an in-process database; a
    leading ``~`` is the home folder, as a shell reads it).

    >>> sqlite_path("sqlite:///cache/ctxwin.db"), sqlite_path("sqlite:////var/ctxwin.db")
    ('cache/ctxwin.db', '/var/ctxwin.db')
    """
    path = sqlite_file(url)
    if path is None:
        raise StoreError(
            f"not a SQLite store URL: {mask_url(url)!r} ({SQLITE_FORM})",
            url=mask_url(url),
            operation="open",
        )
    return os.path.expanduser(path) if path.startswith("~") else path


class SQLiteStore:
    """Values in a SQLite file (``store: sqlite:///path.db``).

    Safe for several threads (two connections, one for reads and one for writes, each
    behind a lock of its own) and several processes on one machine writing the same file at
    once; a forked child opens connections of its own. Not for a file on a network share
    (SQLite's locks do not hold there): use Redis across machines.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        ttl: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        check_limits(url, timeout=timeout, ttl=ttl, max_bytes=max_bytes)
        self.url = mask_url(url)
        path = sqlite_path(url)
        self.path = path if path == ":memory:" else os.path.abspath(path)
        """The file, absolute: a reconnection (after ``close()``, in a forked child) opens
        this file even when the working folder has changed since."""
        self.timeout = timeout
        self.ttl = ttl
        self.max_bytes = max_bytes
        self._writer = _Line()
        self._reader = self._writer if self.path == ":memory:" else _Line()
        """Reads have a connection of their own: behind the writer's lock, a get waited for
        this process's puts, each perhaps waiting for another process's write lock, where a
        WAL reader waits for no writer. (``:memory:`` is one connection's own database.)"""
        self._state = threading.Lock()  # for _file and reopened, shared by the two
        self._pid = os.getpid()
        self._puts = 0
        self._file: tuple[int, int] | None = None
        """The file's device and inode when a connection last opened it."""
        self.reopened = 0
        """How many times the file was found deleted or replaced, and opened again: what
        the old one held is lost (the shelf puts back what requests still quote)."""
        for line in self._lines():  # both now: a reconnection makes the table if need be
            self._run("open", _opened, line)

    def get(self, key: str) -> bytes | None:
        def read(conn: sqlite3.Connection) -> object:
            row = conn.execute(
                f"SELECT value, expires FROM {TABLE} WHERE key = ?", (key,)
            ).fetchone()
            if row is None or (row[1] is not None and row[1] <= _now()):
                return None
            return row[0]

        value = self._run("get", read, self._reader)
        return check_value(
            self.url, key, value, "the file was written by something other than ctxwin?"
        )

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        check_size(self.url, value, self.max_bytes)
        life = ttl if ttl is not None else self.ttl
        expires = _now() + life if life is not None else None

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(  # the later expiry of the two (NULL: never), unless this one is past
                f"INSERT INTO {TABLE} (key, value, expires) VALUES (?1, ?2, ?3) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = CASE "
                f"WHEN ?4 THEN excluded.expires WHEN {TABLE}.expires IS NULL "
                f"OR excluded.expires IS NULL THEN NULL "
                f"ELSE MAX({TABLE}.expires, excluded.expires) END",
                (key, sqlite3.Binary(value), expires, life is not None and life <= 0),
            )
            self._puts += 1
            if self._puts % PURGE_EVERY == 0:
                self._purge(conn)

        self._run("put", write)

    def put_new(self, key: str, value: bytes, *, ttl: float | None = None) -> bytes:
        """Keep ``value`` unless ``key`` holds one already (not expired), in one statement
        (the first writer wins across processes); the value it holds now."""
        check_size(self.url, value, self.max_bytes)
        life = ttl if ttl is not None else self.ttl

        def write(conn: sqlite3.Connection) -> object:
            now = _now()
            expires = now + life if life is not None else None
            conn.execute(
                f"INSERT INTO {TABLE} (key, value, expires) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                f"expires = excluded.expires WHERE {TABLE}.expires IS NOT NULL "
                f"AND {TABLE}.expires <= ?",
                (key, sqlite3.Binary(value), expires, now),
            )
            row = conn.execute(f"SELECT value FROM {TABLE} WHERE key = ?", (key,)).fetchone()
            return value if row is None else row[0]

        kept = self._run("put", write)
        return (
            check_value(self.url, key, kept, "the file was written by something other than ctxwin?")
            or value
        )

    def reopen_if_replaced(self) -> int:
        """Look at the file now (a stat, about 2 us; no lock while it is the same): one
        deleted or replaced since the last call is opened again, made anew if need be.
        How many times that happened (:attr:`reopened`), counted even when opening it
        again failed (the next call raises the StoreError). A policy's shelf calls it before
        each request's look at the originals it quotes, so that a file deleted between two
        requests that make no store call is noticed, and what they quote put back, at once
        (not at the next call that happens to reach the store)."""
        if self._file is not None and self._file != _file_id(self.path):
            with suppress(StoreError):  # the next call raises it (and looks again)
                self._run("open", _opened)
        return self.reopened

    def purge(self) -> int:
        """Delete the expired rows now; the number deleted."""
        return self._run("purge", self._purge)

    def close(self) -> None:
        for line in self._lines():
            with self._locked("close", line):
                conn, line.conn = line.conn, None
                if conn is not None:  # a forked child's are None: _locked set them so
                    conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.url!r})"

    def _purge(self, conn: sqlite3.Connection) -> int:
        done = conn.execute(
            f"DELETE FROM {TABLE} WHERE expires IS NOT NULL AND expires <= ?", (_now(),)
        )
        return done.rowcount

    def _run(
        self,
        operation: str,
        work: Callable[[sqlite3.Connection], T],
        line: _Line | None = None,
    ) -> T:
        """``work`` on ``line``'s connection (the writer's unless said)."""
        line = self._writer if line is None else line
        with self._locked(operation, line) as deadline:
            return work(self._connection(line, deadline))

    def _lines(self) -> tuple[_Line, ...]:
        if self._reader is self._writer:
            return (self._writer,)
        return (self._writer, self._reader)

    @contextmanager
    def _locked(self, operation: str, line: _Line) -> Iterator[float]:
        """``line``'s lock held; the call's deadline, ``timeout`` from now, bounding both
        the wait for another thread and then SQLite's (:meth:`_connection`). Every failure a
        StoreError."""
        deadline = _clock() + self.timeout
        if self._pid != os.getpid():  # forked: the parent's locks and connections are not ours
            self._forked()
        if not line.lock.acquire(timeout=max(0.0, deadline - _clock())):
            raise StoreError(
                f"{self.url}: {operation} waited over {self.timeout}s for another thread",
                url=self.url,
                operation=operation,
            )
        try:
            yield deadline
        except (sqlite3.Error, OSError) as e:
            raise StoreError(
                f"{self.url}: {operation} failed: {type(e).__name__}: {e}",
                url=self.url,
                operation=operation,
                refused=operation == "put" and _full(e),
            ) from e
        finally:
            line.lock.release()

    def _forked(self) -> None:
        """In a forked child: new locks, and connections opened anew when used; the
        parent's are never closed here (closing may touch the parent's WAL)."""
        for line in self._lines():
            if line.conn is not None:
                _INHERITED.append(line.conn)
            line.lock, line.conn, line.file, line.busy = threading.Lock(), None, None, -1
        self._state, self._pid = threading.Lock(), os.getpid()

    def _connection(self, line: _Line, deadline: float) -> sqlite3.Connection:
        """``line``'s connection, opened if need be, with SQLite's busy timeout set to what
        is left before ``deadline``."""
        if self.path != ":memory:":
            self._look(line)
        if line.conn is None:
            line.conn, line.busy = self._connect(deadline), -1
            if self.path != ":memory:":
                line.file = _file_id(self.path)
                with self._state:
                    self._file = line.file
        busy = math.ceil(max(0.0, deadline - _clock()) * 1000)
        if busy != line.busy:  # a call that waited for another thread: the rest of its time
            line.conn.execute(f"PRAGMA busy_timeout = {busy}")
            line.busy = busy
        return line.conn

    def _look(self, line: _Line) -> None:
        """Close ``line``'s connection when the file at the path is not the one it opened:
        deleted or replaced behind this store's back (a cache cleaner), while connected or
        since a ``close()``, writing on would go to a file no other process reads (a stat
        per call: about 2 us, a tenth of a put). Counted once for both connections."""
        now = _file_id(self.path)
        with self._state:
            if self._file is not None and self._file != now:
                self._file = None
                self.reopened += 1
        if line.conn is not None and line.file != now:
            line.conn.close()
            line.conn = None

    def _wal(self, conn: sqlite3.Connection, deadline: float) -> None:
        """WAL mode, asked again while another connection holds the lock it needs (two
        processes opening a new file at once): SQLite answers that at once, "database is
        locked", without waiting its busy timeout."""
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or _clock() >= deadline:
                    raise
            time.sleep(0.005)

    def _connect(self, deadline: float) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        left = max(0.0, deadline - _clock())
        conn = sqlite3.connect(
            self.path, timeout=left, isolation_level=None, check_same_thread=False
        )
        try:
            if self.path != ":memory:":
                self._wal(conn, deadline)
                conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn
