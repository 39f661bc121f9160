"""google-genai objects in ``contents``: the user's own values in them as the SDK sends them.

ctxwin reads an SDK object as the SDK sends it: its fields by their (camelCase) alias, the
ones it was given even when null (see :mod:`ctxwin.formats._objects`). A call's ``args`` and
a function response's ``response`` are the user's data, typed ``dict[str, Any]``: a pydantic
model of the user's inside (a tool returning its own ``Weather``) goes out as the SDK writes
it, its ``model_dump(exclude_none=True)`` (python-genai's ``convert_to_dict``): by field
name, without its null fields. Read with genai's own settings, it went out by alias, with
its nulls: a tool result other than the one the model gets without ctxwin.
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin.formats._objects import rebuilt

__all__ = ["sdk_values"]

_USER_DATA = (
    ("function_call", "args"),
    ("function_response", "response"),
    ("tool_call", "args"),
    ("tool_response", "response"),
)
"""The fields of a ``types.Part`` holding the user's data, and the key of it in each."""


def sdk_values(content: object) -> object:
    """``content`` (a google-genai ``Content``) with the user's data its parts carry as the
    SDK sends it; the very same object when that holds no model of the user's."""
    parts = getattr(content, "parts", None)
    if isinstance(content, Mapping) or not isinstance(parts, list):
        return content
    new = [_part(p) for p in parts]
    if all(a is b for a, b in zip(new, parts, strict=True)):
        return content
    return content.model_copy(update={"parts": new})  # type: ignore[attr-defined]


def _part(part: object) -> object:
    updates: dict[str, object] = {}
    for field, key in _USER_DATA:
        inner = getattr(part, field, None)
        value = getattr(inner, key, None)
        if value is None or not callable(getattr(inner, "model_copy", None)):
            continue
        sent = rebuilt(value, _as_sent)
        if sent is not value:
            updates[field] = inner.model_copy(update={key: sent})  # type: ignore[union-attr]
    copy = getattr(part, "model_copy", None)
    return copy(update=updates) if updates and callable(copy) else part


def _as_sent(value: object) -> object:
    """An object of the user's as its ``model_dump(exclude_none=True)``; anything else, or
    a dump that fails, as it is (for the parse to refuse naming where)."""
    dump = getattr(value, "model_dump", None)
    if not callable(dump) or isinstance(value, type):
        return value
    try:
        dumped: object = dump(exclude_none=True)
    except (TypeError, ValueError, RecursionError):
        return value
    return dumped
