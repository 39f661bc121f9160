"""Memo caches. They make later calls faster and never change what a call returns."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar

__all__ = ["BLOCK_ENTRIES", "ENTRIES", "PREFIX_ENTRIES", "Memo", "PrefixCache", "shared_prefix"]

T = TypeVar("T")


ENTRIES = 200_000
"""Entries a memo keeps by default (one per message: a long-lived policy's memory levels
off, see ``benchmarks/memory.py``)."""
BLOCK_ENTRIES = 2 * ENTRIES
"""Entries a memo of block counts keeps (a message holds a block or more)."""


class Memo:
    """Identity memo for parsed and rendered messages, bounded: past ``max_entries`` the
    older half of the entries goes at once (the bound is far above what one history holds,
    so an agent's history stays in). Dropping the oldest entry one put at a time made every
    put walk the slots of all the entries dropped before it (a dict keeps them until it is
    rebuilt): a full memo grew slower with each put, to milliseconds a message.

    Keys are ``id()`` of objects that the memo keeps alive, so an id is never reused while
    its entry exists. The memo assumes what it is given is not mutated afterwards: ctxwin
    never mutates its input, and callers must not mutate a message dict in place after
    passing it (build a new dict instead, or use a fresh :class:`~ctxwin.Policy`).
    """

    def __init__(self, max_entries: int = ENTRIES) -> None:
        self._data: dict[tuple[int, int], tuple[object, object]] = {}
        self._max = max_entries

    def get(self, obj: object, salt: int = 0) -> object | None:
        hit = self._data.get((id(obj), salt))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put(self, obj: object, value: object, salt: int = 0) -> None:
        data = self._data
        data[(id(obj), salt)] = (obj, value)
        if len(data) > self._max:
            self._data = dict(islice(data.items(), len(data) - self._max // 2, None))

    def __len__(self) -> int:
        return len(self._data)


def shared_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading objects ``a`` and ``b`` share (by identity): compared 64 at a time
    at C speed, then one by one inside the block that differs."""
    n = min(len(a), len(b))
    if all(map(operator.is_, a, b)):
        return n
    i = 0
    while i < n:
        j = min(i + 64, n)
        if all(map(operator.is_, a[i:j], b[i:j])):
            i = j
            continue
        while a[i] is b[i]:
            i += 1
        return i
    return n


PREFIX_ENTRIES = 64
"""Entries of a :class:`PrefixCache` at most: the conversations a policy serves in turn
that each resume where they stopped. (Named apart from :data:`ENTRIES`: under that one
name it rebound the memo bound for every module importing it after, and the LangChain
converter's memo kept 64 messages, not 200,000.)"""
ITEMS = 1 << 17
"""Objects (messages) the sequences of a :class:`PrefixCache`'s entries hold in all, at
most: 64 conversations of 2,048 messages; longer ones, fewer of them."""


class PrefixCache(Generic[T]):
    """States of left folds over message sequences, found again by identity.

    ``take(seq)`` returns the state whose sequence is an identity prefix of ``seq`` (the
    objects themselves, compared with ``is``), removing it from the cache — the caller feeds
    the rest and ``put``s it back. A miss returns ``None``: start from scratch. Up to
    ``size`` entries, of ``items`` objects in all (the newest entry is kept whatever its
    length), serve as many conversations applied in turn by one policy: with 8, a server
    going round 9 conversations re-read each from its first message at every request.
    """

    def __init__(self, size: int = PREFIX_ENTRIES, items: int = ITEMS) -> None:
        self._entries: list[tuple[tuple[object, ...], T]] = []
        self._size = size
        self._items = items
        self._held = 0

    def take(self, seq: Sequence[object], key: object = None) -> tuple[int, T] | None:
        n_seq = len(seq)
        for i, (prefix, state) in enumerate(self._entries):
            n = len(prefix)
            if (
                n <= n_seq
                and (n == 0 or (prefix[0] is seq[0] and prefix[-1] is seq[n - 1]))
                and all(map(operator.is_, prefix, seq))
            ):
                if key is not None and getattr(state, "cache_key", None) != key:
                    continue
                return n, self._pop(i)
        return None

    def take_alike(
        self, seq: Sequence[object], key: object, alike: Callable[[Any, Any], bool]
    ) -> tuple[int, T] | None:
        """Like :meth:`take`, for states that depend on what ``alike`` compares alone: the
        entry whose sequence ``seq`` starts with, each object the same or ``alike`` it (the
        objects after the prefix both share by identity are compared, most recent entry
        first)."""
        n_seq = len(seq)
        for i, (prefix, state) in enumerate(self._entries):
            n = len(prefix)
            if n > n_seq or getattr(state, "cache_key", None) != key:
                continue
            k = shared_prefix(prefix, seq)
            if k and all(map(alike, prefix[k:], seq[k:n])):
                return n, self._pop(i)
        return None

    def shared(self, seq: Sequence[object], key: object = None) -> int:
        """The longest identity prefix an entry made under ``key`` shares with ``seq``."""
        return max(
            (
                shared_prefix(prefix, seq)
                for prefix, state in self._entries
                if key is None or getattr(state, "cache_key", None) == key
            ),
            default=0,
        )

    def common(
        self, seq: Sequence[object], slack: int | None = None, key: object = None
    ) -> tuple[int, T] | None:
        """The entry sharing the longest identity prefix with ``seq``, and that length
        (removed from the cache, like :meth:`take`), for states that stay valid when cut
        to a prefix (a list of per-message outputs); None when no entry shares any.
        ``slack``: only an entry ``seq`` shares all of but its last ``slack`` items (not
        another sequence that merely starts alike); ``key``: only an entry made under it
        (as :meth:`take`)."""
        best: tuple[int, int] | None = None
        for i, (prefix, state) in enumerate(self._entries):
            if key is not None and getattr(state, "cache_key", None) != key:
                continue
            k = shared_prefix(prefix, seq)
            if slack is not None and k < len(prefix) - slack:
                continue
            if k and (best is None or k > best[1]):
                best = (i, k)
        if best is None:
            return None
        return best[1], self._pop(best[0])

    def put(self, seq: Sequence[object], state: T) -> None:
        entry = tuple(seq)
        self._entries.insert(0, (entry, state))
        self._held += len(entry)
        while len(self._entries) > 1 and (
            len(self._entries) > self._size or self._held > self._items
        ):
            self._pop(len(self._entries) - 1)

    def _pop(self, i: int) -> T:
        """Remove entry ``i``; its state."""
        prefix, state = self._entries.pop(i)
        self._held -= len(prefix)
        return state
