"""Gemini parts: the fields a part may hold, in either spelling (REST's camelCase, the
Python SDK's snake_case), the kind of a part the adapter carries untouched, and the values
of calls and responses (``args`` and ``response``, JSON objects) as text and back (kept
apart from ``gemini.py`` so each stays a size a reader can hold)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ctxwin._core.jsontext import NOT_JSON, compact_json, parse_json

__all__ = [
    "CALL",
    "DATA_FIELDS",
    "RESPONSE",
    "STYLED_KEYS",
    "call_args",
    "is_error_response",
    "kind",
    "object_or_output",
    "response_text",
    "single_string_key",
    "spelling",
    "under_key",
    "wrapper_key",
]

CALL = ("functionCall", "function_call")
RESPONSE = ("functionResponse", "function_response")
_META = {
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
    "mediaResolution",
    "media_resolution",
}
"""Part fields that say something about the part's data rather than being it."""
DATA_FIELDS = frozenset(
    {
        "text",
        "inlineData",
        "inline_data",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "fileData",
        "file_data",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
    }
)
"""A part's data fields: the API takes exactly one per part (a ``oneof``)."""
STYLED_KEYS = {
    "functionCall": "camel",
    "functionResponse": "camel",
    "inlineData": "camel",
    "fileData": "camel",
    "thoughtSignature": "camel",
    "executableCode": "camel",
    "codeExecutionResult": "camel",
    "function_call": "snake",
    "function_response": "snake",
    "inline_data": "snake",
    "file_data": "snake",
    "thought_signature": "snake",
    "executable_code": "snake",
    "code_execution_result": "snake",
}


def spelling(part: Mapping[str, Any], names: tuple[str, str]) -> str | None:
    """Which spelling of a field the part sets (not to ``null``), if any."""
    if part.get(names[0]) is not None:
        return names[0]
    return names[1] if part.get(names[1]) is not None else None


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def kind(part: Mapping[str, Any]) -> str:
    """The kind of an uninterpreted part: its data field, in camelCase (``inlineData``)."""
    if part.get("thought") is True:
        return "thought"
    set_keys = [k for k, v in part.items() if v is not None and k not in _META]
    data = next((k for k in set_keys if k in DATA_FIELDS), None)
    return _camel(str(data if data is not None else set_keys[0])) if set_keys else "unknown"


def single_string_key(response: object) -> str | None:
    """The key of a ``{"output": "..."}``-like response: one key, a string value (a key
    of another type, which a Python dict may have, is no JSON object's: read as JSON)."""
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if isinstance(key, str) and isinstance(value, str):
            return key
    return None


_WRAPPERS = ("output", "result")
"""The keys a tool's data comes under: ``output`` by the API's convention, ``result`` as
google-genai's automatic function calling sends what a function returns."""


def wrapper_key(response: object) -> str | None:
    """The key of a ``{"result": {...}}``-like response: its one key, ``output`` or
    ``result``, holding an object or an array (the data the tool returned, which the
    response wraps; a ``select`` runs on it, as on the same result in another format)."""
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if key in _WRAPPERS and isinstance(value, (Mapping, list)):
            return str(key)
    return None


def response_text(response: object) -> str:
    """A response as the text of its result: the string of a ``{"output": "..."}``-like
    one, the JSON of the object or array a ``{"result": {...}}``-like one wraps, else its
    JSON."""
    if response is None:
        return ""
    key = single_string_key(response) or wrapper_key(response)
    if key is not None:
        assert isinstance(response, Mapping)
        value = response[key]
        return value if isinstance(value, str) else compact_json(value)
    return compact_json(response)


def under_key(key: str, text: str) -> dict[str, object]:
    """A new text for a ``{"result": {...}}``-like response, under the same key: as the
    object or array it spells where that reads back as the very text (compact, finite, no
    key twice), else as the text itself (a placeholder, a cap, a summary, indented JSON).
    Either reads back as ``text`` (:func:`response_text`)."""
    value = parse_json(text)
    if isinstance(value, (dict, list)) and _sent_as(value) == text:
        return {key: value}
    return {key: text}


def object_or_output(text: str, is_error: bool = False) -> object:
    """A response for new text: the object the text is when it reads back as that very
    text (:func:`_reads_back_as`), else the text as ``output`` (``error`` for an error, which
    stays one). An object holding an ``error`` is Gemini's failed call: a result's selection
    such as ``{"error": "no such user", "hint": ...}`` goes as ``{"output": text}`` and
    stays a success; an error's object without one (its ``error`` cut away) as
    ``{"error": text}``. Either reads back as ``text``."""
    value = parse_json(text)
    if (
        isinstance(value, dict)
        and is_error_response(value) == is_error
        and _reads_back_as(value, text)
    ):
        return value
    return {"error" if is_error else "output": text}


def _reads_back_as(value: dict[str, Any], text: str) -> bool:
    """Whether ``value``, sent as a response, is valid JSON that reads back as ``text``
    (:func:`response_text`): not when the text spells it otherwise (indented, a key twice,
    ``1e5``, a number out of range: ``1e400`` parsed as ``Infinity``, or ``NaN``, neither
    of which is JSON), nor when it is an object of one string, which reads back as that
    string (``{"status":"shipped"}`` as ``shipped``: the text counted would not be what is
    read, and the policy applied again would select from ``shipped``), or an ``output`` or
    ``result`` of an object or array alone, which reads back as what it wraps."""
    if single_string_key(value) is not None or wrapper_key(value) is not None:
        return False
    return _sent_as(value) == text


def _sent_as(value: object) -> str | None:
    """The JSON text ``value`` goes as, or None where it is no JSON (``NaN``, ``Infinity``)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):
        return None


def is_error_response(response: object) -> bool:
    """Gemini reads a response's ``error`` key as the error: one that holds something
    (``"error": null`` or ``false``, as tools return on success, is none)."""
    return isinstance(response, Mapping) and bool(response.get("error"))


def call_args(arguments: str) -> object:
    """Call arguments as Gemini wants them: an object (other text is kept as ``input``)."""
    value = parse_json(arguments)
    if value is NOT_JSON:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}
