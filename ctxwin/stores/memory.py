"""The in-process store: a dict bounded by bytes, oldest-used out first."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from ctxwin.stores._base import DEFAULT_MAX_BYTES, check_limits, check_size

__all__ = ["MemoryStore"]


class MemoryStore:
    """Values in this process only (``store: memory``, the library's default).

    ``max_bytes`` bounds one value; ``max_total`` bounds them all, the least recently used
    going first (a value larger than ``max_total`` is refused as one over ``max_bytes`` is:
    kept, it would evict itself). ``ttl`` is the default lifetime in seconds (None: no
    expiry).
    """

    url = "memory"

    def __init__(
        self,
        *,
        ttl: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_total: int = 512 * 1024 * 1024,
    ) -> None:
        check_limits("memory", ttl=ttl, max_bytes=max_bytes, max_total=max_total)
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.max_total = max_total
        self._data: OrderedDict[str, tuple[bytes, float | None]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            value, expires = hit
            if expires is not None and time.monotonic() >= expires:
                self._remove(key)
                return None
            self._data.move_to_end(key)
            return value

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        check_size(self.url, value, min(self.max_bytes, self.max_total))
        with self._lock:
            self._put(key, value, ttl)

    def put_new(self, key: str, value: bytes, *, ttl: float | None = None) -> bytes:
        """Keep ``value`` unless ``key`` holds one already (not expired); the value it
        holds now: the first writer's wins (looked at and put under one lock)."""
        check_size(self.url, value, min(self.max_bytes, self.max_total))
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and (hit[1] is None or time.monotonic() < hit[1]):
                self._data.move_to_end(key)
                return hit[0]
            self._put(key, value, ttl)
        return value

    def _put(self, key: str, value: bytes, ttl: float | None) -> None:
        """Keep ``value`` under ``key`` (the lock held), dropping the oldest past
        ``max_total``. The life a key has left is never shortened (another policy's shorter
        TTL): its expiry is the later of the two (None: never); a ``ttl`` of 0 or less
        removes it."""
        life = ttl if ttl is not None else self.ttl
        now = time.monotonic()
        expires = now + life if life is not None else None
        old = self._data.get(key)
        if expires is not None and life is not None and life > 0 and old is not None:
            if old[1] is None:
                expires = None
            elif old[1] > now:
                expires = max(expires, old[1])
        self._remove(key)
        self._data[key] = (value, expires)
        self._size += len(value)
        while self._size > self.max_total and self._data:
            oldest = next(iter(self._data))
            self._remove(oldest)

    def close(self) -> None:
        with self._lock:
            self._data.clear()
            self._size = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def _remove(self, key: str) -> None:
        old = self._data.pop(key, None)
        if old is not None:
            self._size -= len(old[0])
