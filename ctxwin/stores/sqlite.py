"""The SQLite store: one file, shared by the processes of one machine.

``sqlite:///relative/path.db`` (from the working folder when the store opens),
``sqlite:////absolute/path.db``, ``sqlite:///~/path.db`` (from the home folder),
``sqlite:///:memory:`` (this process only). The file is in WAL mode, so readers never wait
for a writer and writers wait for each other at most ``timeout`` seconds (SQLite's busy
timeout). Expiry times are wall-clock (``time.time``), the one clock that processes share.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ctxwin._exceptions import StoreError
from ctxwin.stores._base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    check_limits,
    check_size,
    check_value,
    mask_url,
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


def sqlite_path(url: str) -> str:
    """The file a ``sqlite:///`` URL names (``:memory:`` for an in-process database; a
    leading ``~`` is the home folder, as a shell reads it).

    >>> sqlite_path("sqlite:///cache/ctxwin.db"), sqlite_path("sqlite:////var/ctxwin.db")
    ('cache/ctxwin.db', '/var/ctxwin.db')
    """
    scheme, sep, rest = url.partition("://")
    if scheme != "sqlite" or not sep or not rest.startswith("/") or rest == "/":
        raise StoreError(
            f"not a SQLite store URL: {mask_url(url)!r} (use sqlite:///relative.db or "
            "sqlite:////absolute/path.db)",
            url=mask_url(url),
            operation="open",
        )
    path = rest[1:].partition("?")[0]
    return os.path.expanduser(path) if path.startswith("~") else path


class SQLiteStore:
    """Values in a SQLite file (``store: sqlite:///path.db``).

    Safe for several threads (one connection behind a lock) and several processes on one
    machine writing the same file at once; a forked child opens its own connection. Not for
    a file on a network share (SQLite's locks do not hold there): use Redis across machines.
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
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._puts = 0
        with self._locked("open"):
            self._connection()

    def get(self, key: str) -> bytes | None:
        def read(conn: sqlite3.Connection) -> object:
            row = conn.execute(
                f"SELECT value, expires FROM {TABLE} WHERE key = ?", (key,)
            ).fetchone()
            if row is None or (row[1] is not None and row[1] <= _now()):
                return None
            return row[0]

        value = self._run("get", read)
        return check_value(
            self.url, key, value, "the file was written by something other than ctxwin?"
        )

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        check_size(self.url, value, self.max_bytes)
        life = ttl if ttl is not None else self.ttl
        expires = _now() + life if life is not None else None

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT OR REPLACE INTO {TABLE} (key, value, expires) VALUES (?, ?, ?)",
                (key, sqlite3.Binary(value), expires),
            )
            self._puts += 1
            if self._puts % PURGE_EVERY == 0:
                self._purge(conn)

        self._run("put", write)

    def purge(self) -> int:
        """Delete the expired rows now; the number deleted."""
        return self._run("purge", self._purge)

    def close(self) -> None:
        with self._locked("close"):
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.url!r})"

    def _purge(self, conn: sqlite3.Connection) -> int:
        done = conn.execute(
            f"DELETE FROM {TABLE} WHERE expires IS NOT NULL AND expires <= ?", (_now(),)
        )
        return done.rowcount

    def _run(self, operation: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._locked(operation):
            return work(self._connection())

    @contextmanager
    def _locked(self, operation: str) -> Iterator[None]:
        """The lock held (waiting at most ``timeout``); every failure a StoreError."""
        if self._pid != os.getpid():  # forked: the parent's lock and connection are not ours
            if self._conn is not None:  # never closed here: closing may touch the parent's WAL
                _INHERITED.append(self._conn)
            self._lock, self._conn, self._pid = threading.Lock(), None, os.getpid()
        if not self._lock.acquire(timeout=self.timeout):
            raise StoreError(
                f"{self.url}: {operation} waited over {self.timeout}s for another thread",
                url=self.url,
                operation=operation,
            )
        try:
            yield
        except (sqlite3.Error, OSError) as e:
            raise StoreError(
                f"{self.url}: {operation} failed: {type(e).__name__}: {e}",
                url=self.url,
                operation=operation,
            ) from e
        finally:
            self._lock.release()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
                conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn
