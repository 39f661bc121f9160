"""SDK objects in a history: turned into the plain dicts a request body carries.

Users append what their SDK returns — an OpenAI ``ChatCompletionMessage`` or Responses output
item, an Anthropic ``Message`` or its content blocks, a LiteLLM ``Message`` — to the history
they send. ctxwin reads anything with a pydantic ``model_dump`` (without importing any SDK)
and writes plain dicts, which the SDKs take as request params. Data that is already plain
comes back as the very same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ctxwin._core.jsontext import MAX_DEPTH, long_int, long_int_words

__all__ = ["Cleaner", "TooDeep", "Unreadable", "plain", "rebuilt"]

_ATOMS = (str, int, float, bool, type(None))
_SCALARS = (str, int, float)
_KEYS = (str, int, float, bool, type(None))
"""The keys JSON encoders write (as strings); the SDKs' and ctxwin's take no other."""


Cleaner = Callable[[dict[str, object]], dict[str, object]]
"""Cleans the dict an SDK object at the top of an item became."""


@dataclass
class Unreadable(Exception):
    """A value that is neither JSON data nor an object with ``model_dump``, a key no JSON
    encoder writes (``key``: a tuple's, say), or an integer too long to write as JSON text
    (``long``: :func:`~ctxwin._core.jsontext.long_int`)."""

    value: object
    where: list[str | int]
    """The keys from the item down to the value (filled while unwinding); for a key, to the
    object that has it."""
    key: bool = False
    long: bool = False

    def type_name(self) -> str:
        t = type(self.value)
        return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__name__

    def said(self) -> str:
        """What is wrong, as the error at its place says it."""
        if self.key:
            said = f"an object's keys must be strings, not a {self.type_name()} ({self.value!r})"
            return said[:200]
        if self.long:
            return f"{long_int_words()}: pass it as a string"
        return (
            f"a {self.type_name()} is not something ctxwin can read: pass the message as a "
            "dict (for a pydantic object, its .model_dump())"
        )


@dataclass
class TooDeep(Exception):
    """Data nested deeper than :data:`~ctxwin._core.jsontext.MAX_DEPTH`."""

    where: list[str | int]


def plain(value: object, top: Cleaner | None = None) -> object:
    """``value`` with every SDK object in it turned into a dict (as its SDK sends it: see
    ``_dump``), every other ``Mapping`` into a dict and every scalar of a subclass (an
    ``Enum``'s member) into its plain value; the very same object when there was none.
    ``top`` cleans the dict an object at the top became (a response object's fields a
    request does not take)."""
    if type(value) in _ATOMS:
        return value
    dumped = _dump(value)
    if dumped is not None:
        out = _plain(dumped, 1)
        return top(out) if top is not None and isinstance(out, dict) else out
    return _plain(value, 0)


def _dump(value: object) -> object | None:
    """An object's data as its SDK sends it in a request: the fields it was given
    (``exclude_unset``), ``None`` ones included (``document_title: null`` of an Anthropic
    citation, ``code: null`` of a Responses ``code_interpreter_call`` are required), without
    what the SDK leaves out (``__api_exclude__``: the ``parsed_arguments`` of a parsed
    call); plus the other fields that hold a value (defaults of an object made by hand)."""
    if isinstance(value, (Mapping, list, tuple)):
        return None
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        return None
    exclude = getattr(value, "__api_exclude__", None)
    try:
        given: object = dump(mode="json", exclude_unset=True, by_alias=True, exclude=exclude)
        valued: object = dump(mode="json", exclude_none=True, by_alias=True, exclude=exclude)
    except TypeError:  # a model_dump of another shape (pydantic v1 style, or not pydantic)
        out: object = dump()
        return out
    except (ValueError, RecursionError):  # a value it cannot write as JSON, a cycle, too deep
        return _python_dump(dump, exclude)
    return _union(given, valued)


def _python_dump(dump: Callable[..., object], exclude: object) -> object:
    """The same dumps in python mode, which leaves a value pydantic cannot write as JSON (a
    numpy number, a user's object) as it is, for the walk that follows to read or to name
    with where it is; a cycle, or data deeper than pydantic goes: too deep, as dicts are."""
    try:
        given = dump(exclude_unset=True, by_alias=True, exclude=exclude)
        valued = dump(exclude_none=True, by_alias=True, exclude=exclude)
    except (ValueError, RecursionError):
        raise TooDeep([]) from None
    return _union(given, valued)


_ABSENT = object()


def _union(given: object, valued: object, depth: int = 0) -> object:
    """Two dumps of one object as one: each key either has, recursively (a python-mode dump
    keeps a cycle: too deep)."""
    if depth > MAX_DEPTH:
        raise TooDeep([])
    if isinstance(given, dict) and isinstance(valued, dict):
        out = {k: _union(given.get(k, _ABSENT), v, depth + 1) for k, v in valued.items()}
        out.update((k, v) for k, v in given.items() if k not in valued)
        return out
    if isinstance(given, list) and isinstance(valued, list) and len(given) == len(valued):
        return [_union(g, v, depth + 1) for g, v in zip(given, valued, strict=True)]
    return valued if given is _ABSENT else given


def _plain(value: object, depth: int) -> object:
    t = type(value)
    if t in _ATOMS:
        return value
    plain = t is dict or t is list or t is tuple  # the usual: no ABC check (cold path)
    if not plain and isinstance(value, _SCALARS):  # of a subclass: an Enum's member
        return _scalar(value)
    if depth > MAX_DEPTH:
        raise TooDeep([])
    if isinstance(value, dict) or (not plain and isinstance(value, Mapping)):
        # a Mapping that is not a dict (``MappingProxyType``, ``UserDict``) goes out as one:
        # JSON encoders, the SDKs' included, take dicts only
        out: dict[object, object] | None = None if isinstance(value, dict) else dict(value)
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, _KEYS):
                raise Unreadable(key, [], key=True)
            new = _child(item, depth, key)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, (list, tuple)):
        seq: list[object] | None = None
        for i, item in enumerate(value):
            new = _child(item, depth, i)
            if new is not item:
                if seq is None:
                    seq = list(value)
                seq[i] = new
        return value if seq is None else seq
    dumped = _dump(value)
    if dumped is None:
        raise Unreadable(value, [])
    return _plain(dumped, depth + 1)


def _scalar(value: str | int | float) -> object:
    """The plain value of a subclass's scalar: ``Role.USER`` of ``class Role(str, Enum)`` is
    ``"user"`` (as JSON encoders write it), an ``IntEnum``'s member its number."""
    if isinstance(value, str):
        return str.__str__(value)
    return int(value) if isinstance(value, int) else float(value)


def _child(item: object, depth: int, key: object) -> object:
    try:
        if type(item) in _ATOMS:
            if type(item) is int and long_int(item):
                raise Unreadable(item, [], long=True)
            return item
        return _plain(item, depth + 1)
    except (Unreadable, TooDeep) as e:
        e.where.insert(0, key if isinstance(key, (str, int)) else repr(key))
        raise


def rebuilt(value: object, leaf: Callable[[object], object], depth: int = 0) -> object:
    """``value`` with ``leaf(x)`` in place of each value in it that is not a mapping or a
    list; the very same containers where nothing in them changed. Past
    :data:`~ctxwin._core.jsontext.MAX_DEPTH`, as it is: the parse refuses it, naming where."""
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        new = {k: rebuilt(v, leaf, depth + 1) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new
    if isinstance(value, (list, tuple)):
        items = [rebuilt(v, leaf, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return leaf(value)
