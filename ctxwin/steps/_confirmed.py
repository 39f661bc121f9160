"""Recall handles a notice quotes, confirmed to name an original kept: a text that holds,
where ctxwin writes one, a notice of ctxwin's (:func:`~ctxwin.steps._placeholder.own_handle`)
may still be a raw result holding such a line word for word (``cat`` of an agent's log). Its
placeholder quotes the notice's handle, and its text is not kept, only once the handle is
known to be kept: this shelf put it lately or holds its original, or the store gives back
that handle's original. Anything else (unknown, the store failing) says no, and the text is
kept under its own handle: it is never lost for want of a check.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxwin.steps._shelf import Shelf

__all__ = ["CONFIRMED", "MISSED_FOR", "Confirmed"]

CONFIRMED = 4096
"""Handles a shelf remembers the store's answer for (the request's several plans of a
result ask once; a text holding a notice is rare, so a few suffice)."""
MISSED_FOR = 60.0
"""Seconds a handle the store did not hold is not asked for again."""


class Confirmed:
    """The handles of one shelf found kept (or not) in its store, asked once each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: OrderedDict[str, float | None] = OrderedDict()
        """handle: None when kept, else when the store was found not to hold it."""

    def __call__(self, shelf: Shelf, handle: str) -> bool:
        """Whether the original of ``handle`` is kept (see the module's docstring)."""
        if shelf.text_of(handle) is not None or not shelf.stale((handle,)):
            return True  # this shelf put it within its life, or holds it in memory
        now = shelf.clock()
        with self._lock:
            if handle in self._found:
                missed = self._found[handle]
                if missed is None or now - missed < MISSED_FOR:
                    return missed is None
        kept = not shelf.fetch(handle, "checking a notice's handle").is_error
        if not kept and shelf.cooling:
            return False  # the store failed (noted): ask again after its cool-off
        with self._lock:
            self._found[handle] = None if kept else now
            self._found.move_to_end(handle)
            if len(self._found) > CONFIRMED:
                self._found.popitem(last=False)
        return kept
