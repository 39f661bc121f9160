"""What the edit of a result whose original the store did not keep says (its
``fallback``): the store failed, or refused that value (over ``max_bytes``, or full)."""

from __future__ import annotations

from ctxwin._core.model import NotKept

__all__ = [
    "CLEARED_FULL",
    "CLEARED_REFUSED",
    "CLEARED_STORE_DOWN",
    "KEPT_FULL",
    "KEPT_REFUSED",
    "KEPT_STORE_DOWN",
    "fallback_of",
]

CLEARED_STORE_DOWN = "store_down: cleared without a recall handle"
"""The ``fallback`` of a window clearing whose original the store failed to keep (a result
step's edit says :data:`KEPT_STORE_DOWN`)."""
KEPT_STORE_DOWN = "store_down: kept without a recall handle"
"""The ``fallback`` of a result step's edit whose original the store failed to keep."""
KEPT_REFUSED = "store_refused: over store.max_bytes, kept without a recall handle"
"""The ``fallback`` of a result step's edit whose original the store refused (over its
``max_bytes``): the store is up, this one value was not kept."""
CLEARED_REFUSED = "store_refused: over store.max_bytes, cleared without a recall handle"
""":data:`KEPT_REFUSED` for a window clearing."""
KEPT_FULL = "store_refused: the store is full, kept without a recall handle"
"""The ``fallback`` of a result step's edit whose original the store refused otherwise
than for its size (a Redis at ``maxmemory``, a full disk): it is up and answers reads."""
CLEARED_FULL = "store_refused: the store is full, cleared without a recall handle"
""":data:`KEPT_FULL` for a window clearing."""


def fallback_of(why: NotKept, *, cleared: bool = False) -> str:
    """The ``fallback`` of an edit whose original the store did not keep for ``why``: a
    result step's (``kept ...``), or a window clearing's (``cleared``)."""
    if why == "over_max_bytes":
        return CLEARED_REFUSED if cleared else KEPT_REFUSED
    if why == "full":
        return CLEARED_FULL if cleared else KEPT_FULL
    return CLEARED_STORE_DOWN if cleared else KEPT_STORE_DOWN
