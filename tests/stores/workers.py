"""Work for other processes (top-level functions, so a spawned process can import them)."""

from __future__ import annotations

from ctxwin.stores import open_store

__all__ = ["put_many", "read_many"]


def put_many(url: str, worker: int, count: int, prefix: str = "") -> int:
    """``count`` puts of ``{prefix}w{worker}-{i}``; the number done."""
    store = open_store(url, timeout=5.0)
    try:
        for i in range(count):
            store.put(f"{prefix}w{worker}-{i}", f"value {worker} {i}".encode() * 8)
    finally:
        store.close()
    return count


def read_many(url: str, keys: list[str]) -> list[bytes | None]:
    store = open_store(url, timeout=5.0)
    try:
        return [store.get(k) for k in keys]
    finally:
        store.close()
