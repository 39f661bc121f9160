"""Stores, chosen by URL: ``memory``, ``sqlite:///path.db``, ``redis://host:port/db``
(``rediss://`` for TLS, ``unix:///path/to/redis.sock?db=0`` for a Unix socket).

>>> store = open_store("memory")
>>> store.put("k", b"v"); store.get("k")
b'v'

SQLite is embedded and safe across processes on one machine; Redis (``pip install
'ctxwin[redis]'``) shares one store across machines. Drivers are imported when a store of
their kind is opened, never with ``ctxwin``.
"""

from __future__ import annotations

from ctxwin._exceptions import StoreError
from ctxwin.stores._base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    REDIS_SCHEMES,
    Store,
    check_limits,
    mask_url,
    url_problem,
)
from ctxwin.stores.memory import MemoryStore

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_TIMEOUT", "MemoryStore", "Store", "open_store"]


def open_store(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    ttl: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Store:
    """The store a URL names. Raises :class:`~ctxwin.StoreError` for an unknown scheme, a URL
    without what its store needs (:func:`~ctxwin.stores._base.url_problem`), or
    a store that cannot be opened (an ImportError with the install hint for a missing
    driver), and for a ``timeout``, ``ttl`` or ``max_bytes`` that is not a positive number
    or is past its bound (a day for ``timeout``, 10**15 for the others), as the policy's
    ``store:`` keys are refused (a ``timeout`` past ``threading.TIMEOUT_MAX`` raised a bare
    OverflowError)."""
    check_limits(url, timeout=timeout, ttl=ttl, max_bytes=max_bytes)
    problem = url_problem(url)
    if problem is not None:
        raise StoreError(problem, url=mask_url(url), operation="open")
    scheme = url.partition("://")[0] if "://" in url else url
    if scheme == "memory":
        return MemoryStore(ttl=ttl, max_bytes=max_bytes)
    if scheme == "sqlite":
        from ctxwin.stores.sqlite import SQLiteStore

        return SQLiteStore(url, timeout=timeout, ttl=ttl, max_bytes=max_bytes)
    assert scheme in REDIS_SCHEMES  # url_problem knows no other
    from ctxwin.stores.redis import RedisStore

    return RedisStore(url, timeout=timeout, ttl=ttl, max_bytes=max_bytes)
