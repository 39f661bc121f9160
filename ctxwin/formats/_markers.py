"""Cache breakpoints on wire content: Anthropic's ``cache_control``, OpenAI's
``prompt_cache_breakpoint``. A message's breakpoint sits on its last block that can take one:
not a thinking block, nor an empty text block (Anthropic answers 400 "cache_control cannot be
set for empty text blocks").

Shared by the adapters of the formats that have explicit breakpoints; everything here works
on the plain dicts of one message, copying what it changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ANTHROPIC", "MARKERS", "OPENAI", "Marker", "takes_marker"]

_NO_MARK = frozenset({"thinking", "redacted_thinking"})
_TEXT_TYPES = frozenset({"text", "input_text"})


class Marker:
    """One kind of marker: its key, its value, and how to put text in a part of its own."""

    def __init__(self, key: str, value: dict[str, str], text_type: str, nested: bool) -> None:
        self.key = key
        self.value = value
        self.text_type = text_type
        self.nested = nested
        """Whether results hold parts of their own that may carry markers (Anthropic)."""

    def on_part(self, part: object) -> bool:
        if not isinstance(part, Mapping):
            return False
        if self.key in part:
            return True
        inner = part.get("content") if self.nested else None
        return isinstance(inner, list) and any(
            isinstance(p, Mapping) and self.key in p for p in inner
        )

    def in_list(self, parts: object) -> bool:
        return isinstance(parts, list) and any(self.on_part(p) for p in parts)

    def cleared(self, part: object) -> object:
        """``part`` without markers (itself when it has none)."""
        if not isinstance(part, Mapping) or not self.on_part(part):
            return part
        out = {k: v for k, v in part.items() if k != self.key}
        inner = out.get("content")
        if self.nested and isinstance(inner, list):
            out["content"] = [self.cleared(p) for p in inner]
        return out

    def marked_list(self, parts: list[Any], on: bool | Mapping[str, Any]) -> list[Any]:
        """The parts with no marker but, when ``on``, one on the last part that takes it:
        ``on`` itself when it is a marker (the one the message had, ``ttl`` kept), else the
        default."""
        out = [self.cleared(p) for p in parts]
        if on:
            value = dict(on) if isinstance(on, Mapping) else dict(self.value)
            for i in range(len(out) - 1, -1, -1):
                part = out[i]
                if isinstance(part, Mapping) and takes_marker(part):
                    out[i] = {**part, self.key: value}
                    break
        return out

    def values(self, item: object) -> list[Mapping[str, Any]]:
        """The markers a wire message carries (its parts', results' parts included), in
        order."""
        out: list[Mapping[str, Any]] = []
        if not isinstance(item, Mapping):
            return out
        for key in ("content", "output"):
            parts = item.get(key)
            for part in parts if isinstance(parts, list) else ():
                if not isinstance(part, Mapping):
                    continue
                if isinstance(part.get(self.key), Mapping):
                    out.append(part[self.key])
                inner = part.get("content") if self.nested else None
                for p in inner if isinstance(inner, list) else ():
                    if isinstance(p, Mapping) and isinstance(p.get(self.key), Mapping):
                        out.append(p[self.key])
        return out

    def as_parts(self, content: object) -> object:
        """String content as a list of one text part (a marker needs a part)."""
        if isinstance(content, str):
            return [{"type": self.text_type, "text": content}]
        return content


def takes_marker(part: object) -> bool:
    """Whether a part can carry a breakpoint: not a thinking block, not an empty text."""
    if not isinstance(part, Mapping) or part.get("type") in _NO_MARK:
        return False
    text = part.get("text")
    return not (part.get("type") in _TEXT_TYPES and isinstance(text, str) and not text.strip())


ANTHROPIC = Marker("cache_control", {"type": "ephemeral"}, "text", nested=True)
OPENAI = Marker("prompt_cache_breakpoint", {"mode": "explicit"}, "text", nested=False)

MARKERS = {"anthropic": ANTHROPIC, "openai": OPENAI}
"""The marker of each kind of breakpoint (``Limits.breakpoint``)."""
