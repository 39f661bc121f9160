"""The calls waiting for a result, as pairing (:mod:`ctxwin._core.pairing`) finds them.

A result answers the first unanswered call with its id in the latest turn that has one,
among the calls of a kind it answers. Kept here per id and kind of result, as a stack of
turns each with its calls in order, finding that call takes constant time on average,
however many calls share the id (an agent numbering its calls ``call_0`` every turn), where
walking every earlier call of the id for each result took time quadratic in them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxwin._core.model import Loc

if TYPE_CHECKING:
    from collections.abc import Container, Mapping

__all__ = ["Waiting"]


class _Turn:
    """The calls of one id in one turn, in order; those before ``head`` are answered."""

    __slots__ = ("calls", "head", "turn")

    def __init__(self, turn: int, loc: Loc) -> None:
        self.turn = turn
        self.calls = [loc]
        self.head = 0


class _Calls:
    """The calls of one id a result of one kind may answer, in request order: the turns
    holding one still unanswered (the latest last; a turn found with none is let go), and
    the last call of all (a result finding none unanswered repeats its result)."""

    __slots__ = ("last", "turns")

    def __init__(self, loc: Loc, turn: int) -> None:
        self.turns = [_Turn(turn, loc)]
        self.last = loc

    def add(self, loc: Loc, turn: int, answered: Container[Loc]) -> None:
        self.last = loc
        top = self._top(answered)
        if top is not None and top.turn == turn:
            top.calls.append(loc)
        else:
            self.turns.append(_Turn(turn, loc))

    def first(self, answered: Container[Loc]) -> Loc | None:
        top = self._top(answered)
        return None if top is None else top.calls[top.head]

    def _top(self, answered: Container[Loc]) -> _Turn | None:
        """The latest turn with a call not ``answered``, its ``head`` at the first such call
        (each call is passed once: ``answered`` only grows)."""
        turns = self.turns
        while turns:
            top = turns[-1]
            calls = top.calls
            while top.head < len(calls) and calls[top.head] in answered:
                top.head += 1
            if top.head < len(calls):
                return top
            turns.pop()
        return None


class Waiting:
    """Per kind of result and call id, the calls it may answer (all of them where any kind
    answers any: ``answers`` None, :attr:`~ctxwin._core.model.PairingRules.answers`).

    Fed each call with an id in request order (:meth:`add`), asked for each result
    (:meth:`find`); ``answered`` is the linker's map of answered calls, which only grows.
    """

    __slots__ = ("_by_kind", "_kinds")

    def __init__(self, answers: frozenset[tuple[str, str]] | None) -> None:
        self._kinds: dict[str, list[str]] | None = None
        if answers is not None:
            self._kinds = {}
            for result, call in sorted(answers):
                self._kinds.setdefault(call, []).append(result)
        # result kind (None: any) -> call id -> its one call so far, or its calls
        self._by_kind: dict[str | None, dict[str, Loc | _Calls]] = {}

    def add(
        self, cid: str, kind: str, loc: Loc, turn_at: Mapping[int, int], answered: Container[Loc]
    ) -> None:
        """Note the call at ``loc`` (of ``kind``, its turn ``turn_at[loc[0]]``)."""
        kinds = self._kinds
        for result in (None,) if kinds is None else kinds.get(kind, ()):
            of_kind = self._by_kind.get(result)
            if of_kind is None:
                of_kind = self._by_kind[result] = {}
            got = of_kind.get(cid)
            if got is None:
                of_kind[cid] = loc  # most ids have one call: no more than its location
                continue
            if not isinstance(got, _Calls):
                got = of_kind[cid] = _Calls(got, turn_at[got[0]])
            got.add(loc, turn_at[loc[0]], answered)

    def find(self, cid: str, kind: str, answered: Container[Loc]) -> tuple[Loc | None, Loc | None]:
        """For a result of ``kind`` answering ``cid``: the call it answers (the first
        unanswered one of the latest turn that has one) and the last call it may answer;
        (None, None) when it may answer none."""
        of_kind = self._by_kind.get(None if self._kinds is None else kind)
        got = of_kind.get(cid) if of_kind is not None else None
        if got is None:
            return None, None
        if isinstance(got, _Calls):
            return got.first(answered), got.last
        return (None if got in answered else got), got
