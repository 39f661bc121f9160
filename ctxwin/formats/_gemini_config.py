"""The SDK's ``config`` (``generate_content(model=, contents=, config=)``): what the request
pays for in it, the system instruction and the tools, as the data the SDK sends."""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Mapping
from typing import get_origin

from ctxwin.formats._objects import TooDeep, Unreadable, plain

__all__ = ["CONFIG_KEYS", "SCHEMA_KEYS", "config_field", "schema_plain", "sdk_plain"]

CONFIG_KEYS = ("system_instruction", "systemInstruction", "tools")
"""What the SDK's ``config`` holds that the request pays for (and :data:`SCHEMA_KEYS`)."""

SCHEMA_KEYS = ("responseSchema", "responseJsonSchema", "response_schema", "response_json_schema")
"""The structured-output schema of a ``generationConfig`` or the SDK's ``config``: "the size
of the response schema counts towards the input token limit"."""


def config_field(obj: object, key: str) -> object:
    """A key of a dict or an attribute of an SDK object (``GenerateContentConfig``)."""
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def schema_plain(value: object) -> object:
    """A response schema as data: a class (a pydantic model, an enum), ``list[Recipe]`` or a
    union as it is (the meter counts the JSON schema pydantic makes of it, as the SDK
    sends one), anything else as :func:`sdk_plain` reads it."""
    if isinstance(value, type) or get_origin(value) is not None:
        return value
    return sdk_plain(value)


def sdk_plain(value: object) -> object:
    """A value of the SDK's ``config`` as data: an SDK object (``types.Content``, a list of
    ``types.Tool``) as the SDK sends it (its ``model_dump``, in Rust: 7x ``plain``'s speed,
    at every request); a Python function as the tool the SDK declares for it (see
    :func:`_declared`); an MCP session as nothing (the SDK lists its tools as it sends the
    request: ctxwin cannot see them); anything else that is not data as it is, which the
    meter refuses naming it, rather than counting it as nothing."""
    if isinstance(value, (str, Mapping)):
        return value  # SDK objects inside are the meter's to read
    if isinstance(value, list):
        items = list(map(sdk_plain, value))
        same = all(a is b for a, b in zip(items, value, strict=True))
        return value if same else [v for v in items if v is not None] or None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True, by_alias=True)
        except (TypeError, ValueError, RecursionError):
            return value  # the meter reads it again, and names what it cannot
    if callable(value):
        return _declared(value)
    if type(value).__module__.partition(".")[0] == "mcp":
        return None
    try:
        return plain(value)
    except (Unreadable, TooDeep):
        return value


_DECLARED: dict[tuple[int, ...], tuple[tuple[object, ...], dict[str, object]]] = {}
"""The declarations of :func:`_declared`, by the function's identity (what it is kept, so
that its ids name nothing else): building one costs about 0.3 ms, at every request."""
_DECLARED_MAX = 1024


def _declared(function: object) -> dict[str, object]:
    """The tool the SDK sends for a Python function (counted, never edited: the same dict
    for every request). A bound method is known by its function and its instance: each
    ``agent.search`` is a new object."""
    func, owner = getattr(function, "__func__", None), getattr(function, "__self__", None)
    who = (func, owner) if func is not None and owner is not None else (function,)
    key = tuple(map(id, who))
    found = _DECLARED.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], who, strict=True)):
        return found[1]
    if len(_DECLARED) >= _DECLARED_MAX:
        _DECLARED.clear()
    declared = _declare(function)
    _DECLARED[key] = (who, declared)
    return declared


def _declare(function: object) -> dict[str, object]:
    """The ``FunctionDeclaration`` the SDK builds of a Python function (python-genai's
    ``t_tool``: ``from_callable(..., use_json_schema=True)``), or, where it cannot be built
    here (google-genai not loaded, a signature the SDK cannot read), an estimate from the
    function's name, docstring and signature: never nothing."""
    types = sys.modules.get("google.genai.types")
    declare = getattr(types, "FunctionDeclaration", None)
    if declare is not None:
        try:
            try:
                built = declare.from_callable_with_api_option(
                    callable=function, api_option="GEMINI_API", use_json_schema=True
                )
            except TypeError:  # an older SDK (no JSON schema), or a type it cannot take
                built = declare.from_callable_with_api_option(
                    callable=function, api_option="GEMINI_API"
                )
            dumped = built.model_dump(mode="json", exclude_none=True, by_alias=True)
            return {"functionDeclarations": [dumped]}
        except Exception:  # the SDK reading the user's code, whatever fails: an estimate
            pass
    return {"functionDeclarations": [_estimate(function)]}


def _estimate(function: object) -> dict[str, object]:
    """A function's name, docstring and signature, as a declaration's fields."""
    name = getattr(function, "__name__", None)
    out: dict[str, object] = {"name": name if isinstance(name, str) else type(function).__name__}
    doc = inspect.getdoc(function)
    if doc:
        out["description"] = doc
    with contextlib.suppress(TypeError, ValueError):  # a builtin without a signature
        out["parameters"] = str(inspect.signature(function))  # type: ignore[arg-type]
    return out
