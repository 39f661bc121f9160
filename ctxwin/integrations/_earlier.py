"""Input items an integration handed the policy before, to stand for equal copies of them.

A framework that rebuilds its history at every model call (the OpenAI Agents SDK 0.24 makes
each input item a new dict at each turn: ``run_items_to_input_items``) hands the policy
objects it has never seen, so every memo keyed by identity misses and each call parses and
counts the whole history again. Where a new item equals (``==``, same type) the item at its
position in the earlier input, the policy is given the earlier object, which its memos know
(as :class:`~ctxwin.formats.langchain.LangChainMessages` gives back the dict of a
checkpointer's copy). What the policy returns is mapped back: an earlier object it leaves as
it is goes out as the very item the framework passed now (frameworks tie items to their
state by identity). Nothing given is modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["EarlierItems", "given_back"]

_HISTORIES = 8
"""Inputs remembered: one per history (runs sharing a filter), the latest first."""


class EarlierItems:
    """The latest inputs handed to the policy, one per history (see the module)."""

    def __init__(self, size: int = _HISTORIES) -> None:
        self._lists: list[list[Any]] = []
        self._size = size

    def known(self, items: Sequence[Any]) -> tuple[list[Any], dict[int, tuple[Any, Any]]]:
        """``items`` with each one equal to the item at its position in the earlier input
        that shares the most leading items with them replaced by that earlier object, and
        for each replaced: ``id(earlier) -> (earlier, item given)``. An earlier object that
        is also among ``items`` (or twice in its list) stays as given: mapped back, it would
        stand for two items. The list returned is remembered for the next call."""
        out = list(items)
        back: dict[int, tuple[Any, Any]] = {}
        at, lead = self._closest(out)
        if at is not None:
            earlier = self._lists.pop(at)
            given = {id(x) for x in out}
            for k in range(min(len(earlier), len(out))):
                old, new = earlier[k], out[k]
                if old is new or id(old) in given or id(old) in back:
                    continue
                if k < lead or _equal(old, new):
                    out[k] = old
                    back[id(old)] = (old, new)
        self._lists.insert(0, out)
        del self._lists[self._size :]
        return out, back

    def _closest(self, items: Sequence[Any]) -> tuple[int | None, int]:
        """The earlier input sharing the most leading items with ``items`` (the same or
        equal), and how many; ``None`` when none shares the first."""
        best: int | None = None
        most = 0
        for i, earlier in enumerate(self._lists):
            n = _leading(earlier, items)
            if n > most:
                best, most = i, n
        return best, most


def given_back(sent: Sequence[Any], back: dict[int, tuple[Any, Any]]) -> list[Any]:
    """``sent`` (what the policy returned) with each earlier object it kept as it was
    replaced by the item given in its place (:meth:`EarlierItems.known`)."""
    out = []
    for item in sent:
        hit = back.get(id(item))
        out.append(hit[1] if hit is not None and hit[0] is item else item)
    return out


def _leading(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share, the same or equal."""
    n = min(len(a), len(b))
    for k in range(n):
        x, y = a[k], b[k]
        if x is not y and not _equal(x, y):
            return k
    return n


def _equal(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b
