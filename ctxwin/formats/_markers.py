"""Cache breakpoints on wire content: Anthropic's ``cache_control``, OpenAI's
``prompt_cache_breakpoint``. A message's breakpoint sits on its last block that can take one
(:meth:`Marker.takes`): for Anthropic any block but those whose request shape has no
``cache_control`` (thinking, a ``fallback`` or ``mcp_tool_listing`` block...), for OpenAI
only the input parts that have the field (text, image, audio, file); never an empty text
block (Anthropic answers 400 "cache_control cannot be set for empty text blocks"). A marker
is a mapping: ``"cache_control": null``, which the SDKs' types allow, is no breakpoint.

Shared by the adapters of the formats that have explicit breakpoints; everything here works
on the plain dicts of one message, copying what it changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

__all__ = ["ANTHROPIC", "MARKERS", "OPENAI", "Marker", "openai_implicit"]

_ANTHROPIC_REFUSED = frozenset(
    {
        # message content blocks (``anthropic.types.beta.BetaContentBlockParam``)
        "thinking",
        "redacted_thinking",
        "fallback",
        "mcp_tool_listing",
        # blocks found only inside a server tool's result block (which takes one itself)
        "advisor_result",
        "advisor_redacted_result",
        "bash_code_execution_output",
        "bash_code_execution_result",
        "code_execution_output",
        "code_execution_result",
        "encrypted_code_execution_result",
        "text_editor_code_execution_create_result",
        "text_editor_code_execution_str_replace_result",
        "text_editor_code_execution_view_result",
        "tool_search_tool_search_result",
        "web_fetch_result",
        "web_fetch_tool_result_error",
        "web_search_result",
    }
)
"""Anthropic block types whose request shape has no ``cache_control`` (anthropic 2.16.0,
``anthropic/types`` and ``anthropic/types/beta``: every other ``*BlockParam`` has one)."""

_OPENAI_TAKEN = frozenset(
    {"text", "image_url", "input_audio", "file", "input_text", "input_image", "input_file"}
)
"""OpenAI parts with a ``prompt_cache_breakpoint`` field (openai 3.57.0: the Chat
``ChatCompletionContentPartParam`` and the Responses ``ResponseInput*Param`` parts). Output
parts (``output_text``, ``refusal``) and a shell call's output chunks have none."""

_TEXT_TYPES = frozenset({"text", "input_text"})


class Marker:
    """One kind of marker: its key, its value, and how to put text in a part of its own."""

    def __init__(
        self,
        key: str,
        value: dict[str, str],
        text_type: str,
        nested: bool,
        *,
        refused: frozenset[str] = frozenset(),
        taken: frozenset[str] | None = None,
    ) -> None:
        self.key = key
        self.value = value
        self.text_type = text_type
        self.nested = nested
        """Whether results hold parts of their own that may carry markers (Anthropic)."""
        self.refused = refused
        """Part types that take no marker."""
        self.taken = taken
        """The only part types that take one (None: all but ``refused``)."""

    def on_part(self, part: object) -> bool:
        """Whether a part (or, nested, a part of its content) carries a marker: a mapping
        under the key (``null`` is none)."""
        if not isinstance(part, Mapping):
            return False
        if isinstance(part.get(self.key), Mapping):
            return True
        inner = part.get("content") if self.nested else None
        return isinstance(inner, list) and any(
            isinstance(p, Mapping) and isinstance(p.get(self.key), Mapping) for p in inner
        )

    def takes(self, part: object) -> TypeGuard[Mapping[str, Any]]:
        """Whether a part can carry a breakpoint: a type that has the field, not an empty
        text."""
        if not isinstance(part, Mapping):
            return False
        kind = part.get("type")
        if kind in self.refused or (self.taken is not None and kind not in self.taken):
            return False
        text = part.get("text")
        return not (kind in _TEXT_TYPES and isinstance(text, str) and not text.strip())

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
                if self.takes(part):
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


ANTHROPIC = Marker(
    "cache_control", {"type": "ephemeral"}, "text", nested=True, refused=_ANTHROPIC_REFUSED
)
OPENAI = Marker(
    "prompt_cache_breakpoint", {"mode": "explicit"}, "text", nested=False, taken=_OPENAI_TAKEN
)

MARKERS = {"anthropic": ANTHROPIC, "openai": OPENAI}
"""The marker of each kind of breakpoint (``Limits.breakpoint``)."""


def openai_implicit(body: object) -> int:
    """The breakpoint OpenAI places itself: under ``prompt_cache_options.mode: implicit``
    (the default) it writes "up to the latest three explicit breakpoints" of the four a
    request may carry (an earlier one is silently not written); ``explicit``, none."""
    options = body.get("prompt_cache_options") if isinstance(body, Mapping) else None
    mode = options.get("mode") if isinstance(options, Mapping) else None
    return 0 if mode == "explicit" else 1
