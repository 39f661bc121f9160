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

Here too are the writers of content the adapters share (:func:`wire_part`,
:func:`render_content`).
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Message, Opaque, Part, Text
from ctxwin._core.snapshot import Fingerprints, Snapshot, matches, snapshot

__all__ = [
    "Rendered",
    "kept",
    "read_again",
    "remembered",
    "render_content",
    "resumed",
    "wire_part",
]


@dataclass
class Rendered:
    """A request's wire items, and the fingerprints of those ctxwin made (``made``: their
    positions, ``own``: they, in order), not of the caller's own."""

    out: list[object] = field(default_factory=list)
    made: list[int] = field(default_factory=list)
    own: list[object] = field(default_factory=list)
    prints: Fingerprints = field(default_factory=lambda: Fingerprints(size=256))  # few calls
    marker: object = None
    """The default marker the items were rendered with (the adapter's ``default_marker``)."""
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


def resumed(
    prefix: PrefixCache[Rendered] | None, messages: Sequence[Message], marker: object = None
) -> Rendered:
    """The items of the longest start of ``messages`` rendered before, with the same default
    ``marker``, and unchanged since (a new, empty one when there is none)."""
    found = prefix.common(messages) if prefix is not None else None
    if found is None or found[1].marker != marker:
        return Rendered(marker=marker)
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
    return Rendered(
        old.out[:start], old.made[:k], old.own[:k], old.prints, marker, unchanged, old.own
    )


def remembered(
    memo: Memo | None, msg: Message, unchanged: set[int] | None = None, salt: int = 0
) -> tuple[object, Snapshot] | None:
    """The item rendered for ``msg`` before, with its fingerprint, while it is unchanged
    (``unchanged``: the ids of items known to be; ``salt``: what it was rendered with, as
    :func:`kept` was told)."""
    hit = memo.get(msg, salt) if memo is not None else None
    if not isinstance(hit, tuple):
        return None
    if (unchanged is not None and id(hit[0]) in unchanged) or matches([hit[0]], hit[1]):
        return hit
    return None


def kept(memo: Memo | None, msg: Message, item: object, salt: int = 0) -> Snapshot:
    """``item`` rendered for ``msg``: kept, with the fingerprint it is handed out with
    (``salt``: 1 when the message took a default marker other than the format's)."""
    snap = snapshot([item])
    if memo is not None:
        memo.put(msg, (item, snap), salt)
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


def wire_part(part: Part, text_type: str = "text") -> object:
    """A content part as wire data: untouched when pristine; an edited text keeps the other
    fields of its part (``cache_control``...); a new one is a plain text part."""
    if isinstance(part, Opaque) or (part.pristine and isinstance(part.raw, Mapping)):
        return part.raw
    if isinstance(part.raw, Mapping):
        return {**part.raw, "text": part.text}
    return {"type": text_type, "text": part.text}


def render_content(
    parts: Sequence[Part], original: object, *, text_type: str = "text", missing: object = None
) -> object:
    """Content in the shape it had: a string (or absent content) stays a string when all
    its parts are text, joined by newlines as :attr:`ToolResult.text` reads them; a list
    stays a list of parts (and so does text whose part has fields of its own, such as a
    cache marker). ``missing`` is what no parts and no original content give."""
    if not isinstance(original, list) and all(
        isinstance(p, Text) and not isinstance(p.raw, Mapping) for p in parts
    ):
        if not parts and original is None:
            return missing
        return "\n".join(p.text for p in parts if isinstance(p, Text))
    return [wire_part(p, text_type) for p in parts]
