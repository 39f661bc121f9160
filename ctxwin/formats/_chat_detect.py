"""Whether a body is an OpenAI Chat Completions request (:meth:`OpenAIChatAdapter.detect
<ctxwin.formats.openai_chat.OpenAIChatAdapter.detect>`): its messages, and the part types
that only OpenAI takes or that only other formats do (kept apart from ``openai_chat.py``
so each stays a size a reader can hold). Another format's calls in a body named as Chat are
refused by :mod:`ctxwin.formats._foreign`."""

from __future__ import annotations

from collections.abc import Container, Mapping
from itertools import repeat

__all__ = ["chat_score"]

_OPENAI_ONLY_PARTS = {"image_url", "input_audio", "file", "refusal"}
_FOREIGN_PARTS = frozenset(
    {
        # Anthropic's blocks (its server tools' end in _tool_use, _tool_result)
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "search_result",
        "container_upload",
        "tool_reference",
        # OpenAI Responses content
        "input_text",
        "output_text",
        "input_image",
        "input_file",
        "summary_text",
        "reasoning_text",
    }
)
"""Part types of other formats: a body holding one is not a chat request. Any other type
may be an OpenAI-compatible server's own (vLLM's ``video_url``, ``audio_url``)."""


_CHAT_ONLY_ROLES = frozenset({"tool", "function", "developer"})


def chat_score(body: object, roles: Container[str]) -> int:
    """How surely ``body`` (a request dict or a bare list) is a chat request whose messages
    have the wire ``roles`` (see :meth:`ctxwin.formats._base.Adapter.detect`): 0 when any
    message rules it out, else 2 when any holds a sign only Chat has, else 1."""
    items: object = body.get("messages") if isinstance(body, Mapping) else body
    if not isinstance(items, list) or not items:
        return 0
    if isinstance(body, Mapping) and ("system" in body or "contents" in body):
        return 0  # Anthropic keeps the system prompt outside the messages
    tools = body.get("tools") if isinstance(body, Mapping) else None
    if isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t for t in tools
    ):
        return 0  # Anthropic's tool definitions
    fast = _plain_score(items, roles)
    if fast is not None:
        return fast
    score = 1
    for m in items:
        if not isinstance(m, Mapping) or "role" not in m:
            return 0
        role = m.get("role")
        if not isinstance(role, str) or role not in roles:
            return 0
        if role in _CHAT_ONLY_ROLES or "tool_calls" in m:
            score = 2
        content = m.get("content")
        if role == "system" and isinstance(content, str):
            score = 2
        if isinstance(content, list):
            parts = _parts_score(content)
            if parts == 0:
                return 0
            score = max(score, parts)
    return score


def _plain_score(items: list[object], roles: Container[str]) -> int | None:
    """:func:`chat_score` of messages that are all plain dicts, their roles and contents read
    at C speed (a request of 1,000 messages was scanned in Python at every apply without
    ``format=``: 0.66 ms); None for any other list, which the loop reads."""
    if set(map(type, items)) != {dict}:
        return None
    try:
        seen: set[object] = set(map(dict.get, items, repeat("role")))  # type: ignore[arg-type]
    except TypeError:  # a role that is no string, unhashable
        return 0
    if not all(isinstance(role, str) and role in roles for role in seen):
        return 0  # None: a message without a role
    contents: list[object] = list(map(dict.get, items, repeat("content")))  # type: ignore[arg-type]
    kinds = set(map(type, contents))
    score = 2 if _sure(items, seen, contents) else 1
    if any(issubclass(kind, list) for kind in kinds):
        for content in contents:
            if isinstance(content, list):
                parts = _parts_score(content)
                if parts == 0:
                    return 0
                score = max(score, parts)
    return score


def _sure(items: list[object], seen: set[object], contents: list[object]) -> bool:
    """Whether plain messages hold a sign only Chat has: a role of its own, ``tool_calls``,
    a system message of text."""
    if not seen.isdisjoint(_CHAT_ONLY_ROLES):
        return True
    if any(map(dict.__contains__, items, repeat("tool_calls"))):  # type: ignore[arg-type]
        return True
    return "system" in seen and any(
        m.get("role") == "system" and isinstance(c, str)  # type: ignore[attr-defined]
        for m, c in zip(items, contents, strict=True)
    )


def _parts_score(content: list[object]) -> int:
    """0 when a part of a message's content rules Chat out, 2 when one only OpenAI takes,
    else 1."""
    score = 1
    for part in content:
        if not isinstance(part, Mapping):
            return 0
        t = part.get("type")
        if not isinstance(t, str):
            return 0
        if t in _OPENAI_ONLY_PARTS:
            score = 2
        elif t in _FOREIGN_PARTS or t.endswith(("tool_use", "tool_result")):
            return 0
    return score
