"""Wire formats: one adapter module each, and detection.

``get_adapter(name)`` returns the adapter of a format; ``detect(body)`` says which format a
body is in, or raises :class:`~ctxwin.FormatError` naming the candidates when it cannot tell.
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin._core.model import FORMATS, FormatName
from ctxwin._exceptions import FormatError
from ctxwin.formats._base import Adapter, json_type
from ctxwin.formats._objects import TooDeep, Unreadable, plain

__all__ = ["FORMATS", "Adapter", "detect", "get_adapter"]

_MODULES: dict[str, tuple[str, str]] = {
    "openai-chat": ("ctxwin.formats.openai_chat", "OpenAIChatAdapter"),
    "anthropic": ("ctxwin.formats.anthropic", "AnthropicAdapter"),
    "openai-responses": ("ctxwin.formats.openai_responses", "OpenAIResponsesAdapter"),
    "gemini": ("ctxwin.formats.gemini", "GeminiAdapter"),
}
_ADAPTERS: dict[str, Adapter] = {}


def get_adapter(name: str | Adapter) -> Adapter:
    """The adapter of a format name (``openai-chat``, ``anthropic``, ``openai-responses``,
    ``gemini``); an adapter instance is returned as it is."""
    if isinstance(name, Adapter):
        return name
    adapter = _ADAPTERS.get(name)
    if adapter is not None:
        return adapter
    if name not in _MODULES:
        raise FormatError(
            f"unknown format {name!r}; expected one of: {', '.join(FORMATS)}", format=name
        )
    import importlib

    module, cls = _MODULES[name]
    new: Adapter = getattr(importlib.import_module(module), cls)()
    _ADAPTERS[name] = new
    return new


_CONTAINERS = ("messages", "input", "contents")


def _plain_lists(body: object) -> tuple[object, str | None]:
    """``body`` with SDK objects in its message list as dicts (for judging its shape), and
    where the first item that cannot be read stands."""
    unreadable: str | None = None

    def convert(items: list[object], where: str) -> list[object]:
        nonlocal unreadable
        out = []
        for i, item in enumerate(items):
            try:
                out.append(plain(item, _response_object))
            except (Unreadable, TooDeep) as e:
                if unreadable is None:
                    what = e.type_name() if isinstance(e, Unreadable) else "deep data"
                    unreadable = f"{where.strip()}[{i}] is a {what}, which ctxwin cannot read"
                out.append(item)
        return out

    if isinstance(body, list):
        return convert(body, "item "), unreadable
    if isinstance(body, Mapping):
        changed = {
            k: convert(body[k], k)
            for k in _CONTAINERS
            if isinstance(body.get(k), list) and any(not isinstance(x, Mapping) for x in body[k])
        }
        return ({**body, **changed} if changed else body), unreadable
    return body, None


def _response_object(data: dict[str, object]) -> dict[str, object]:
    """A response object in a history, as a message (an Anthropic ``Message`` carries its
    id, model, usage...; the others are messages already)."""
    return get_adapter("anthropic").from_object(data)


_MODEL_HINTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("claude",), ("anthropic",)),
    (("gemini", "models/gemini"), ("gemini",)),
    (("gpt", "chatgpt", "o1", "o3", "o4", "codex"), ("openai-chat", "openai-responses")),
)


def _by_model(body: object, candidates: list[FormatName]) -> FormatName | None:
    """The one candidate the body's ``model`` names (``claude-*`` is Anthropic...)."""
    model = body.get("model") if isinstance(body, Mapping) else None
    if not isinstance(model, str):
        return None
    low = model.lower()
    for prefixes, formats in _MODEL_HINTS:
        if low.startswith(prefixes):
            named = [c for c in candidates if c in formats]
            return named[0] if len(named) == 1 else None
    return None


def detect(body: object) -> FormatName:
    """The format of a request body or bare message list, judged by its shape (and, when
    the shape fits several, by the ``model`` it names)."""
    body, unreadable = _plain_lists(body)
    scores = {name: get_adapter(name).detect(body) for name in FORMATS}
    sure = [n for n, s in scores.items() if s == 2]
    maybe = [n for n, s in scores.items() if s >= 1]
    if len(sure) == 1:
        return sure[0]
    if not sure and len(maybe) == 1:
        return maybe[0]
    candidates = sure or maybe
    hinted = _by_model(body, candidates)
    if hinted is not None:
        return hinted
    if unreadable is not None:
        raise FormatError(
            f"cannot tell the wire format: {unreadable}: pass the messages as dicts "
            "(for a pydantic object, its .model_dump())"
        )
    if not candidates:
        kind = type(body).__name__
        hint = (
            "expected a JSON object with 'messages', 'input' or 'contents', or a list of messages"
        )
        if isinstance(body, dict):
            empty = [k for k in _CONTAINERS if body.get(k) in ([], "")]
            lists = [k for k in _CONTAINERS if isinstance(body.get(k), list)]
            others = [k for k in _CONTAINERS if k in body and k not in empty and k not in lists]
            if empty:
                hint = f"its {empty[0]!r} is empty; pass format= to say which format it is"
            elif others and not lists:
                hint = f"its {others[0]!r} must be a list, not {json_type(body[others[0]])}"
            elif lists:
                hint = _shape_hint(body, lists[0])
            else:
                hint = f"the object has keys {sorted(body)[:8]}; " + hint
        elif isinstance(body, list) and not body:
            hint = "the message list is empty; pass format= to say which format it is"
        raise FormatError(f"cannot tell the wire format of this {kind}: {hint}")
    raise FormatError(
        "the wire format is ambiguous: the body could be "
        + " or ".join(candidates)
        + "; pass format="
        + repr(candidates[0])
        + " (or another) to say which",
        candidates=candidates,
    )


def _shape_hint(body: Mapping[str, object], key: str) -> str:
    """What a message list holds that no format takes: the first item that is off."""
    items = body[key]
    assert isinstance(items, list)
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"{key}[{i}] is {type(item).__name__}, not an object"
        role = item.get("role")
        if "role" in item and not isinstance(role, str):
            return f"{key}[{i}].role is {role!r}"
        if isinstance(role, str) and not any(role in get_adapter(f).wire_roles for f in FORMATS):
            known = sorted({r for f in FORMATS for r in get_adapter(f).wire_roles})
            return f"{key}[{i}].role: unknown role {role!r} (known: {', '.join(known)})"
    return (
        f"its {key!r} holds {len(items)} items no format fully matches (the first "
        f"item has keys {sorted(items[0])[:6] if isinstance(items[0], Mapping) else '?'}); "
        "pass format= to say which format it is"
    )
