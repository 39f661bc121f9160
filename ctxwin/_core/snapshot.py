"""Snapshots of the raw data a parse read, to find what was mutated in place since.

ctxwin memoizes parsed messages by the identity of the user's message objects, so a history
that grew by a round is parsed for that round only. Users may still change a message in
place (Anthropic's documented way to move a cache breakpoint pops ``cache_control`` from
one block and sets it on another). A snapshot holds every object reachable from a message
through its dicts, lists and tuples, level by level (read by ``gc.get_referents``, at C
speed); a message whose snapshot differs has been mutated and is parsed again. A level is
compared by equality (identity first, at C speed) and its numbers by type too: ``True``
replaced by ``1``, ``1`` by ``1.0`` or ``0.0`` by ``-0.0`` is a change (each parses or
renders differently), while an equal number of the same type is not (a body read again
from JSON, as a proxy's requests are, holds new objects for its floats and large ints); a
string of a subclass, or a dict subclass, in place of an equal one brings its class among
the next level's objects, a change too. Snapshots of whole chunks of messages are compared
first, so a request costs one comparison per chunk; only a chunk that differs is looked at
message by message.

Data holding anything but plain JSON containers and values (a dict subclass, a ``Mapping``
of the user's own, a string subclass) is walked in Python instead, through what it holds
as a mapping or a sequence (``gc.get_referents`` would follow its class into the whole
interpreter). Data nested past :data:`~ctxwin._core.jsontext.MAX_DEPTH` (or holding itself)
gives a snapshot that matches nothing: the parse that follows refuses it.

Limits: keys of plain dicts are not in a snapshot (a key renamed in place, its value kept
and still last, goes unseen); an element moved in place from the end of one list to the
start of the next list of the same level goes unseen; an SDK object (a pydantic model, or
a dataclass instance with a ``__dict__``: what a pydantic-ai tool may return) is read
through its fields (``__dict__``, and pydantic's extra fields), the ones it keeps elsewhere
(``__slots__``) unseen; a string subclass with ``__slots__ = ()`` put in place of an
equal string goes unseen (a fresh apply refuses it).
"""

from __future__ import annotations

import dataclasses
import gc
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from math import copysign
from typing import cast

from ctxwin._core.jsontext import MAX_DEPTH

__all__ = ["CHUNK", "Fingerprints", "Snapshot", "matches", "same", "snapshot"]

CHUNK = 64
"""Messages per chunk snapshot."""

_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})
"""What ``gc.get_referents`` may walk: JSON data (the atoms have no referents)."""
_ATOMS = frozenset({str, int, float, bool, type(None)})
_MAX_OBJECTS = 2_000_000
"""Objects a snapshot holds at most: data past it (a structure that holds itself twice over
doubles at each level) gets a snapshot that matches nothing."""
_NUMBERS = frozenset({bool, int, float})
"""Atoms equal across types (``True == 1 == 1.0``): compared by type as well."""


class Snapshot(list[object]):
    """What :func:`snapshot` took: the list of each level's objects and, per level, where
    its numbers are and which they are (``shape`` is ``None``); or, for data that is not
    plain, the objects of a walk in Python and the length of each container it met
    (``shape``). Equal (``==``) to a snapshot of the very same objects only. (A list, so
    that code keeping snapshots as lists of objects keeps them as they are.)"""

    __slots__ = ("models", "numbers", "shape")

    def __init__(
        self,
        levels: list[list[object]],
        numbers: list[_Numbers | None],
        shape: object,
        models: tuple[list[int] | None, list[list[int] | None]] = (None, []),
    ) -> None:
        super().__init__(levels)
        self.numbers = numbers
        self.shape = shape
        self.models = models
        """Where the SDK objects were among the objects given, and in each level."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Snapshot) and same(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


_Numbers = tuple[list[int], list[object]]
"""The positions of a level's numbers (``bool``, ``int``, ``float``) and the numbers."""


def snapshot(objs: Sequence[object]) -> Snapshot:
    """Every object reachable from ``objs`` through containers, level by level (an SDK
    object through its fields: see :func:`_models`)."""
    levels: list[list[object]] = []
    numbers: list[_Numbers | None] = []
    models: list[list[int] | None] = []
    top = _models(objs, list(map(type, objs)))
    if top == _NOT_DATA:
        return _walked(objs)
    source = _fields_in(objs, top)
    total = 0
    while True:
        level = gc.get_referents(*source)
        if not level:
            return Snapshot(levels, numbers, None, (top, models))
        total += len(level)
        if total > _MAX_OBJECTS or len(levels) > MAX_DEPTH:
            return _never()
        types = list(map(type, level))
        at = _models(level, types)
        if at == _NOT_DATA:
            return _walked(objs)
        levels.append(level)
        models.append(at)
        source = _fields_in(level, at)
        if _NUMBERS.isdisjoint(types):
            numbers.append(None)
        else:
            where = list(compress(range(len(types)), map(_NUMBERS.__contains__, types)))
            numbers.append((where, list(map(level.__getitem__, where))))


_NOT_DATA = [-1]
"""What :func:`_models` answers for a level holding something neither plain nor an SDK
object (a subclass of a plain type, a Mapping of the user's own): walked in Python."""


def _models(level: Sequence[object], types: list[type]) -> list[int] | None:
    """Where a level's SDK objects are (pydantic models and dataclass instances, read
    through their fields), None when it holds plain data only, or :data:`_NOT_DATA`."""
    if _PLAIN.issuperset(types):
        return None
    at = [i for i, t in enumerate(types) if t not in _PLAIN]
    if all(isinstance(getattr(level[i], "__dict__", None), dict) for i in at) and all(
        callable(getattr(types[i], "model_dump", None)) or dataclasses.is_dataclass(types[i])
        for i in at
    ):
        return at
    return _NOT_DATA


def _fields_in(level: Sequence[object], at: list[int] | None) -> Sequence[object]:
    """``level`` with each SDK object replaced by its fields (``__dict__``, and pydantic's
    extra fields): what the next level is read from (its class would lead anywhere)."""
    if at is None:
        return level
    out = list(level)
    for i in at:
        out[i] = _fields(level[i])
    return out


def _fields(obj: object) -> tuple[object, object]:
    """An SDK object's fields: its ``__dict__``, and pydantic's extra fields."""
    return (obj.__dict__, getattr(obj, "__pydantic_extra__", None))


def _never() -> Snapshot:
    """A snapshot that matches nothing (data too deep, too large, or unreadable: the parse
    that follows refuses it, or parses it again at every request)."""
    return Snapshot([[]], [None], object())


def _walked(objs: Sequence[object]) -> Snapshot:
    """The snapshot of data that is not plain, walked in Python (see the module)."""
    out: list[object] = []
    shape: list[int] = []
    stack = [(o, 0) for o in reversed(objs)]
    while stack:
        obj, depth = stack.pop()
        out.append(obj)
        if type(obj) in _ATOMS:
            continue
        try:
            if isinstance(obj, Mapping):
                kids = [x for kv in obj.items() for x in kv]
            elif isinstance(obj, (list, tuple)):
                kids = list(obj)
            elif _models([obj], [type(obj)]) == [0]:  # an SDK object: through its fields
                kids = list(_fields(obj))
            else:
                continue  # an atom of a subclass, or an object of no known kind: by identity
        except Exception:  # a Mapping of the user's own that cannot be read
            return _never()
        if depth >= MAX_DEPTH or len(out) + len(stack) > _MAX_OBJECTS:
            return _never()
        shape.append(len(kids))
        stack.extend((k, depth + 1) for k in reversed(kids))
    return Snapshot([out], [None], tuple(shape))


def _levels(snap: Snapshot) -> list[list[object]]:
    return snap  # type: ignore[return-value]  # a snapshot's items are its levels


def same(a: list[object], b: object) -> bool:
    """Whether two snapshots hold the very same objects (by identity) in the same order."""
    if not isinstance(a, Snapshot) or not isinstance(b, Snapshot):
        return False
    if a.shape != b.shape or len(a) != len(b):
        return False
    return all(
        len(x) == len(y) and all(map(operator.is_, x, y))
        for x, y in zip(_levels(a), _levels(b), strict=True)
    )


def matches(objs: Sequence[object], snap: Snapshot) -> bool:
    """Whether ``objs`` hold the data ``snap`` was taken of: level by level, each compared
    at C speed by equality (identity first), and its numbers by type as well (``1`` equals
    ``True`` and ``1.0``: :func:`_same_numbers`); it stops at the first level that differs,
    before walking into what is not plain data (whose referents differ from plain data's:
    its class). Data that is not plain is compared by identity (:func:`same`)."""
    if snap.shape is not None:
        return same(snapshot(objs), snap)
    top, models = snap.models
    if _models(objs, list(map(type, objs))) != top:
        return False
    source = _fields_in(objs, top)
    try:
        for old, numbers, at in zip(_levels(snap), snap.numbers, models, strict=True):
            level = gc.get_referents(*source)
            if level != old:
                return False
            if numbers is not None and not _same_numbers(level, numbers):
                return False
            if at is not None and _models(level, list(map(type, level))) != at:
                return False  # an SDK object in place of an equal one of another kind
            source = _fields_in(level, at)
    except Exception:  # an object of the user's own whose __eq__ raises: a change
        return False
    return not gc.get_referents(*source)


def _same_numbers(level: list[object], numbers: _Numbers) -> bool:
    """Whether a level equal to the one snapshot holds the same numbers: the very objects
    (at C speed), else, as a body read again from JSON holds new ones, numbers of the same
    types (``True`` is not ``1``, nor ``1`` ``1.0``) and a zero of the same sign: equal ones
    (the level is), which render the same."""
    where, old = numbers
    new = list(map(level.__getitem__, where))
    if all(map(operator.is_, new, old)):
        return True
    types = list(map(type, new))
    if types != list(map(type, old)):
        return False
    if float not in types:
        return True
    at = list(map(operator.is_, types, repeat(float)))
    signs = [
        list(map(copysign, repeat(1.0), cast("list[float]", list(compress(x, at)))))
        for x in (new, old)
    ]
    return signs[0] == signs[1]


@dataclass
class Fingerprints:
    """The snapshots of the items of one message list, as parsed (see the module)."""

    items: list[Snapshot | None] = field(default_factory=list)
    """Per item: its snapshot, or ``None`` for an item compared by identity only."""
    chunks: list[Snapshot] = field(default_factory=list)
    """Per complete chunk: the snapshot of its plain items together."""

    tail: tuple[int, Snapshot] | None = None
    """The snapshot of the items after the last complete chunk, and how many there were."""
    size: int = CHUNK
    """Items per chunk."""

    def truncate(self, n: int) -> None:
        """Keep the fingerprints of the first ``n`` items only."""
        del self.items[n:]
        del self.chunks[n // self.size :]
        if self.tail is not None and len(self.chunks) * self.size + self.tail[0] != n:
            self.tail = None

    def add(self, raw: object, plain: bool) -> None:
        """The next item, as just parsed (``plain``: JSON data, not an SDK object)."""
        self.items.append(snapshot([raw]) if plain else None)

    def changed(self, raws: Sequence[object], n: int) -> list[int]:
        """The positions below ``n`` whose item changed in place since it was fingerprinted
        (their fingerprints are taken again)."""
        out: list[int] = []
        size = self.size
        full = min(n // size, len(self.chunks))
        for c in range(full):
            lo = c * size
            if not matches(self._plain(raws, lo, lo + size), self.chunks[c]):
                out.extend(self._items_changed(raws, lo, lo + size))
                self.chunks[c] = snapshot(self._plain(raws, lo, lo + size))
        lo = full * size
        tail = self.tail
        if not (
            tail is not None and tail[0] == n - lo and matches(self._plain(raws, lo, n), tail[1])
        ):
            out.extend(self._items_changed(raws, lo, n))
        return out

    def seal(self, raws: Sequence[object]) -> None:
        """After a parse of all of ``raws``: chunk snapshots for the complete chunks, and
        the tail's, so the next request compares a few snapshots, not every item."""
        n = len(raws)
        size = self.size
        for c in range(len(self.chunks), n // size):
            self.chunks.append(snapshot(self._plain(raws, c * size, (c + 1) * size)))
        lo = len(self.chunks) * size
        self.tail = (n - lo, snapshot(self._plain(raws, lo, n)))

    def _plain(self, raws: Sequence[object], lo: int, hi: int) -> Sequence[object]:
        items = self.items
        if all(items[lo:hi]):  # no None (``in`` would call each snapshot's __eq__)
            return raws[lo:hi]
        return [raws[i] for i in range(lo, hi) if items[i] is not None]

    def _items_changed(self, raws: Sequence[object], lo: int, hi: int) -> list[int]:
        out = []
        for i in range(lo, hi):
            snap = self.items[i]
            if snap is not None and not matches([raws[i]], snap):
                out.append(i)
                self.items[i] = snapshot([raws[i]])
        return out
