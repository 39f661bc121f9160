"""What ctxwin rendered for earlier requests, reused only while the caller has not changed it.

The wire items ctxwin makes (an edited message, a placeholder) are kept by the message they
render, and the list of a request's items by its messages, so that a growing history renders
its new messages only. The request handed out holds those very items; a caller may change
one in place before sending it (Anthropic's usual caching code sets ``cache_control`` on the
last block of each request). Handed out again, the change would come back in every later
request: four turns of such markers, and Anthropic refuses the fifth ("A maximum of 4 blocks
with cache_control"). So each item ctxwin made is fingerprinted as it is handed out
(:class:`~ctxwin._core.snapshot.Fingerprints`, compared a chunk at a time), and one changed
since is rendered again. The caller's own items (messages ctxwin left as they were) are the
caller's history: parsing sees their changes.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Message
from ctxwin._core.snapshot import Fingerprints, Snapshot, matches, snapshot

__all__ = ["Rendered", "kept", "read_again", "remembered", "resumed"]


@dataclass
class Rendered:
    """A request's wire items, and the fingerprints of those ctxwin made (``made``: their
    positions, ``own``: they, in order), not of the caller's own."""

    out: list[object] = field(default_factory=list)
    made: list[int] = field(default_factory=list)
    own: list[object] = field(default_factory=list)
    prints: Fingerprints = field(default_factory=lambda: Fingerprints(size=256))  # few calls
    unchanged: set[int] = field(default_factory=set)
    """The ids of items the request before handed out, found unchanged: a memo hit on one
    needs no look of its own (after a jump, most items past it are such)."""
    held: list[object] = field(default_factory=list)
    """Those items, alive while their ids are looked up."""

    def add(self, item: object, snap: Snapshot | None) -> None:
        """The next item; ``snap``: its fingerprint, or None for one of the caller's own."""
        if snap is not None:
            self.made.append(len(self.out))
            self.own.append(item)
            self.prints.items.append(snap)
        self.out.append(item)

    def seal(self) -> None:
        self.prints.seal(self.own)
        self.unchanged, self.held = set(), []


def resumed(prefix: PrefixCache[Rendered] | None, messages: Sequence[Message]) -> Rendered:
    """The items of the longest start of ``messages`` rendered before and unchanged since
    (a new, empty one when there is none)."""
    found = prefix.common(messages) if prefix is not None else None
    if found is None:
        return Rendered()
    start, old = found
    k = bisect.bisect_left(old.made, start)  # the items ctxwin made before it
    n = len(old.own)
    changed = old.prints.changed(old.own, n)  # all of them, a chunk at a time
    unchanged: set[int] = set()
    if k < n:  # items past the start come again as memo hits: known unchanged
        gone = set(changed)
        unchanged = {id(old.own[i]) for i in range(k, n) if i not in gone}
    if changed and min(changed) < k:
        k = min(changed)
        start = old.made[k]
    old.prints.truncate(k)
    return Rendered(old.out[:start], old.made[:k], old.own[:k], old.prints, unchanged, old.own)


def remembered(
    memo: Memo | None, msg: Message, unchanged: set[int] | None = None
) -> tuple[object, Snapshot] | None:
    """The item rendered for ``msg`` before, with its fingerprint, while it is unchanged
    (``unchanged``: the ids of items known to be)."""
    hit = memo.get(msg) if memo is not None else None
    if not isinstance(hit, tuple):
        return None
    if (unchanged is not None and id(hit[0]) in unchanged) or matches([hit[0]], hit[1]):
        return hit
    return None


def kept(memo: Memo | None, msg: Message, item: object) -> Snapshot:
    """``item`` rendered for ``msg``: kept, with the fingerprint it is handed out with."""
    snap = snapshot([item])
    if memo is not None:
        memo.put(msg, (item, snap))
    return snap


def read_again(
    memo: Memo | None, msg: Message, unchanged: set[int] | None = None
) -> tuple[object, Snapshot]:
    """The item handed out for a message ctxwin read from SDK objects, with its fingerprint:
    a copy of its reading (``msg.raw``, which the parse memo keeps, and whose changes
    parsing would never see, the caller's objects being unchanged), the same one while the
    caller has not changed it, a new one once it has."""
    hit = remembered(memo, msg, unchanged)
    if hit is not None:
        return hit
    item = copy.deepcopy(msg.raw)
    return item, kept(memo, msg, item)
