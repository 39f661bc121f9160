"""The store contract: bytes by key, with a bounded wait, a TTL and a size limit.

A store holds what ctxwin must not lose or compute twice: the originals of shortened
results (recall) and the summary memo. Every method raises :class:`~ctxwin.StoreError`
(never a driver's own exception) when the store is down, slow past its ``timeout``, or
refuses a value; the engine catches it and falls back.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from ctxwin._exceptions import StoreError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "Store",
    "check_size",
    "check_value",
    "mask_url",
]

DEFAULT_TIMEOUT = 0.5
"""Seconds a read or write may take before the store counts as down."""
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""The largest value a store keeps (bytes); a larger one is refused with a StoreError."""


@runtime_checkable
class Store(Protocol):
    """Bytes by string key. ``url`` says which store it is (passwords masked)."""

    url: str

    def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when there is none (or it expired)."""
        ...

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Keep ``value`` under ``key`` (``ttl`` seconds, or the store's default TTL)."""
        ...

    def close(self) -> None:
        """Release connections and files (the store may be reopened by URL)."""
        ...


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for errors and reports)."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


def check_size(url: str, value: bytes, max_bytes: int) -> None:
    """Refuse a value over the store's limit (a StoreError naming both sizes)."""
    if len(value) > max_bytes:
        raise StoreError(
            f"{url}: value of {len(value):,} bytes is over the store's limit of "
            f"{max_bytes:,} bytes",
            url=url,
            operation="put",
            refused=True,
        )


def check_value(url: str, key: str, value: object, why: str) -> bytes | None:
    """What a driver read, if it is bytes or nothing; else a StoreError saying ``why``."""
    if value is None or isinstance(value, bytes):
        return value
    raise StoreError(
        f"{url}: the value under {key!r:.80} is {type(value).__name__}, not bytes ({why})",
        url=url,
        operation="get",
    )
