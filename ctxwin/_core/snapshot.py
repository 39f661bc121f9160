"""Snapshots of the raw data a parse read, to find what was mutated in place since.

ctxwin memoizes parsed messages by the identity of the user's message objects, so a history
that grew by a round is parsed for that round only. Users may still change a message in
place (Anthropic's documented way to move a cache breakpoint pops ``cache_control`` from
one block and sets it on another). A snapshot is the flat list of every object reachable
from a message through its dicts and lists, in order (read by ``gc.get_referents``, at C
speed); a message whose snapshot differs, object for object, has been mutated and is
parsed again. Snapshots of whole chunks of messages are compared first, so a request costs
one comparison per chunk; only a chunk that differs is looked at message by message.

Limits: keys are not in a snapshot (a key renamed in place, its value kept, goes unseen);
SDK objects (pydantic models) are compared by identity only.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["CHUNK", "Fingerprints", "same", "snapshot"]

CHUNK = 64
"""Messages per chunk snapshot."""


def snapshot(objs: Sequence[object]) -> list[object]:
    """Every object reachable from ``objs`` through containers, level by level."""
    out: list[object] = []
    level = list(objs)
    while level:
        level = gc.get_referents(*level)
        out.extend(level)
    return out


def same(a: list[object], b: list[object]) -> bool:
    """Whether two snapshots hold the same objects in the same order (compared by identity
    first, as list equality does; an equal object put in place of another is the same)."""
    return len(a) == len(b) and a == b


@dataclass
class Fingerprints:
    """The snapshots of the items of one message list, as parsed (see the module)."""

    items: list[list[object] | None] = field(default_factory=list)
    """Per item: its snapshot, or ``None`` for an item compared by identity only."""
    chunks: list[list[object]] = field(default_factory=list)
    """Per complete chunk: the snapshot of its plain items together."""

    tail: tuple[int, list[object]] | None = None
    """The snapshot of the items after the last complete chunk, and how many there were."""

    def truncate(self, n: int) -> None:
        """Keep the fingerprints of the first ``n`` items only."""
        del self.items[n:]
        del self.chunks[n // CHUNK :]
        if self.tail is not None and len(self.chunks) * CHUNK + self.tail[0] != n:
            self.tail = None

    def add(self, raw: object, plain: bool) -> None:
        """The next item, as just parsed (``plain``: JSON data, not an SDK object)."""
        self.items.append(snapshot([raw]) if plain else None)

    def changed(self, raws: Sequence[object], n: int) -> list[int]:
        """The positions below ``n`` whose item changed in place since it was fingerprinted
        (their fingerprints are taken again)."""
        out: list[int] = []
        full = min(n // CHUNK, len(self.chunks))
        for c in range(full):
            lo = c * CHUNK
            if not same(snapshot(self._plain(raws, lo, lo + CHUNK)), self.chunks[c]):
                out.extend(self._items_changed(raws, lo, lo + CHUNK))
                self.chunks[c] = snapshot(self._plain(raws, lo, lo + CHUNK))
        lo = full * CHUNK
        tail = self.tail
        if not (
            tail is not None
            and tail[0] == n - lo
            and same(snapshot(self._plain(raws, lo, n)), tail[1])
        ):
            out.extend(self._items_changed(raws, lo, n))
        return out

    def seal(self, raws: Sequence[object]) -> None:
        """After a parse of all of ``raws``: chunk snapshots for the complete chunks, and
        the tail's, so the next request compares a few snapshots, not every item."""
        n = len(raws)
        for c in range(len(self.chunks), n // CHUNK):
            self.chunks.append(snapshot(self._plain(raws, c * CHUNK, (c + 1) * CHUNK)))
        lo = len(self.chunks) * CHUNK
        self.tail = (n - lo, snapshot(self._plain(raws, lo, n)))

    def _plain(self, raws: Sequence[object], lo: int, hi: int) -> Sequence[object]:
        items = self.items
        if None not in items[lo:hi]:
            return raws[lo:hi]
        return [raws[i] for i in range(lo, hi) if items[i] is not None]

    def _items_changed(self, raws: Sequence[object], lo: int, hi: int) -> list[int]:
        out = []
        for i in range(lo, hi):
            snap = self.items[i]
            if snap is not None:
                now = snapshot([raws[i]])
                if not same(now, snap):
                    out.append(i)
                    self.items[i] = now
        return out
