"""Whether a body is an OpenAI Chat Completions request (:meth:`OpenAIChatAdapter.detect
<ctxwin.formats.openai_chat.OpenAIChatAdapter.detect>`): its messages, and the part types
that only OpenAI takes or that only other formats do (kept apart from ``openai_chat.py``
so each stays a size a reader can hold). Another format's calls in a body named as Chat are
refused by :mod:`ctxwin.formats._foreign`."""

from __future__ import annotations

from collections.abc import Container, Mapping

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


def chat_score(body: object, roles: Container[str]) -> int:
    """How surely ``body`` (a request dict or a bare list) is a chat request whose messages
    have the wire ``roles`` (see :meth:`ctxwin.formats._base.Adapter.detect`)."""
    items: object = body.get("messages") if isinstance(body, Mapping) else body
    if not isinstance(items, list):
        return 0
    if isinstance(body, Mapping) and ("system" in body or "contents" in body):
        return 0  # Anthropic keeps the system prompt outside the messages
    tools = body.get("tools") if isinstance(body, Mapping) else None
    if isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t for t in tools
    ):
        return 0  # Anthropic's tool definitions
    score = 1
    for m in items:
        if not isinstance(m, Mapping) or "role" not in m:
            return 0
        role = m.get("role")
        if not isinstance(role, str) or role not in roles:
            return 0
        if role in ("tool", "function", "developer") or "tool_calls" in m:
            score = 2
        content = m.get("content")
        if role == "system" and isinstance(content, str):
            score = 2
        if isinstance(content, list):
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
    return score if items else 0
