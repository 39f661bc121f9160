"""Wire formats: one adapter module each, and detection.

``get_adapter(name)`` returns the adapter of a format; ``detect(body)`` says which format a
body is in, or raises :class:`~ctxwin.FormatError` naming the candidates when it cannot tell.
"""

from __future__ import annotations

from ctxwin._core.model import FORMATS, FormatName
from ctxwin._exceptions import FormatError
from ctxwin.formats._base import Adapter

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


def detect(body: object) -> FormatName:
    """The format of a request body or bare message list, judged by its shape."""
    scores = {name: get_adapter(name).detect(body) for name in FORMATS}
    sure = [n for n, s in scores.items() if s == 2]
    maybe = [n for n, s in scores.items() if s >= 1]
    if len(sure) == 1:
        return sure[0]
    if not sure and len(maybe) == 1:
        return maybe[0]
    candidates = sure or maybe
    if not candidates:
        kind = type(body).__name__
        hint = (
            "expected a JSON object with 'messages', 'input' or 'contents', or a list of messages"
        )
        if isinstance(body, dict):
            empty = [k for k in ("messages", "input", "contents") if body.get(k) in ([], "")]
            if empty:
                hint = f"its {empty[0]!r} is empty; pass format= to say which format it is"
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
