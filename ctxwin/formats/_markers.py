"""Cache breakpoints on wire content: Anthropic's ``cache_control``, OpenAI's
``prompt_cache_breakpoint``. A message's breakpoint sits on its last block that can take one
(:meth:`Marker.takes`): for Anthropic any block but those whose request shape has no
``cache_control`` (thinking, a ``fallback`` or ``mcp_tool_listing`` block...), for OpenAI
only the input parts that have the field (text, image, audio, file); never an empty text
block (Anthropic answers 400 "cache_control cannot be set for empty text blocks"). A marker
is a mapping: ``"cache_control": null``, which the SDKs' types allow, is no breakpoint.
Anthropic's may also sit on blocks inside a block (a result's parts, a search result's
text, a document's ``content`` source): they are read, counted and taken away at any depth
the API takes (:data:`NESTING` levels at most).
An OpenAI Chat body that LiteLLM sends to Anthropic carries Anthropic's ``cache_control``
on its parts (:data:`CHAT`).

Shared by the adapters of the formats that have explicit breakpoints; everything here works
on the plain dicts of one message, copying what it changes (:class:`ChatMarkers` writes in
the dict it is given, the adapter's copy).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from ctxwin._core.conversation import Conversation
    from ctxwin._core.model import Message

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "CHAT_CACHE_CONTROL",
    "MARKERS",
    "NESTING",
    "ONE_HOUR",
    "OPENAI",
    "ChatMarkers",
    "Marker",
    "anthropic_envelope_marks",
    "automatic_hour",
    "openai_implicit",
]

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

_CHAT_CACHE_CONTROL_TAKEN = frozenset({"text", "image_url", "file"})
"""OpenAI Chat parts whose ``cache_control`` LiteLLM carries into the Anthropic request
(litellm 1.110.2 ``prompt_templates/factory.py``: ``anthropic_messages_pt`` for a user's
text, image and file parts and an assistant's text, ``convert_to_anthropic_tool_result``
for a tool message's); it drops the field elsewhere (an audio part, a refusal)."""

_TEXT_TYPES = frozenset({"text", "input_text"})


NESTING = 8
"""How deep inside a message's block markers are looked for (and taken away): Anthropic's
blocks nest three deep at most (a result's document's ``content`` source's text); what
lies deeper is no block the API takes, and the walk stays bounded."""


def _inner(part: Mapping[str, Any]) -> tuple[list[Any], ...]:
    """The lists of blocks a block holds, which may carry markers of their own: its
    ``content`` (a tool result's, a search result's, an MCP result's) and its source's (a
    document of ``content`` source: ``source.content``)."""
    content, source = part.get("content"), part.get("source")
    inner = source.get("content") if isinstance(source, Mapping) else None
    if isinstance(inner, list):
        return (content, inner) if isinstance(content, list) else (inner,)
    return (content,) if isinstance(content, list) else ()


def _nests(part: Mapping[str, Any]) -> bool:
    """Whether a block may hold blocks (:func:`_inner`)."""
    return "content" in part or "source" in part


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
        """Whether blocks hold blocks of their own that may carry markers (Anthropic: a
        result's parts, a search result's, a document's; :func:`_inner`)."""
        self.refused = refused
        """Part types that take no marker."""
        self.taken = taken
        """The only part types that take one (None: all but ``refused``)."""

    def on_part(self, part: object, depth: int = 0) -> bool:
        """Whether a part (or, nested, a block inside it, at any depth: :func:`_inner`)
        carries a marker: a mapping under the key (``null`` is none)."""
        if not isinstance(part, Mapping):
            return False
        if isinstance(part.get(self.key), Mapping):
            return True
        if not self.nested or depth >= NESTING:
            return False
        key = self.key
        for parts in _inner(part):
            for p in parts:  # a leaf (most are) looked at here, not in a call of its own
                if isinstance(p, Mapping) and (
                    isinstance(p.get(key), Mapping) or (_nests(p) and self.on_part(p, depth + 1))
                ):
                    return True
        return False

    def takes(self, part: object) -> TypeGuard[Mapping[str, Any]]:
        """Whether a part can carry a breakpoint: a type that has the field, not an empty
        text."""
        if not isinstance(part, Mapping):
            return False
        kind = part.get("type")
        if not isinstance(kind, str):  # no part of the provider's: it takes no marker
            return False
        if kind in self.refused or (self.taken is not None and kind not in self.taken):
            return False
        text = part.get("text")
        return not (kind in _TEXT_TYPES and isinstance(text, str) and not text.strip())

    def in_list(self, parts: object) -> bool:
        return isinstance(parts, list) and any(self.on_part(p) for p in parts)

    def cleared(self, part: object, depth: int = 0) -> object:
        """``part`` without markers, nested ones included (itself when it has none; what
        holds none is the very same object)."""
        if not isinstance(part, Mapping):
            return part
        out = None
        if isinstance(part.get(self.key), Mapping):
            out = {k: v for k, v in part.items() if k != self.key}
        if not self.nested or depth >= NESTING:
            return part if out is None else out
        content, source = part.get("content"), part.get("source")
        if isinstance(content, list):
            new = self._cleared_list(content, depth + 1)
            if new is not content:
                out = dict(part) if out is None else out
                out["content"] = new
        if isinstance(source, Mapping) and isinstance(source.get("content"), list):
            new = self._cleared_list(source["content"], depth + 1)
            if new is not source["content"]:
                out = dict(part) if out is None else out
                out["source"] = {**source, "content": new}
        return part if out is None else out

    def _cleared_list(self, parts: list[Any], depth: int) -> list[Any]:
        key = self.key
        new = [
            self.cleared(p, depth) if isinstance(p, Mapping) and (key in p or _nests(p)) else p
            for p in parts
        ]
        return parts if all(map(operator.is_, new, parts)) else new

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
        """The markers a wire message carries (its parts', and the blocks' inside them at
        any depth: :func:`_inner`), in order."""
        out: list[Mapping[str, Any]] = []
        if not isinstance(item, Mapping):
            return out
        for key in ("content", "output"):
            parts = item.get(key)
            for part in parts if isinstance(parts, list) else ():
                self._collect(part, out, 0)
        return out

    def _collect(self, part: object, out: list[Mapping[str, Any]], depth: int) -> None:
        if not isinstance(part, Mapping):
            return
        if isinstance(part.get(self.key), Mapping):
            out.append(part[self.key])
        if self.nested and depth < NESTING:
            key = self.key
            for parts in _inner(part):
                for p in parts:  # a leaf (most are) looked at here, not in a call of its own
                    if not isinstance(p, Mapping):
                        continue
                    if _nests(p):
                        self._collect(p, out, depth + 1)
                    elif isinstance(p.get(key), Mapping):
                        out.append(p[key])

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

CHAT_CACHE_CONTROL = Marker(
    "cache_control", {"type": "ephemeral"}, "text", nested=False, taken=_CHAT_CACHE_CONTROL_TAKEN
)
"""Anthropic's breakpoint on OpenAI Chat content parts, which LiteLLM turns into the
breakpoints of the request it sends to Anthropic (Bedrock, Vertex AI, Azure AI: the same
``cache_control``; Bedrock Converse: a ``cachePoint``) and OpenRouter passes on for Claude.
Its values are :data:`ANTHROPIC`'s, so are its limits."""

MARKERS = {"anthropic": ANTHROPIC, "openai": OPENAI}
"""The marker of each kind of breakpoint (``Limits.breakpoint``)."""


ONE_HOUR: Mapping[str, str] = {"type": "ephemeral", "ttl": "1h"}
"""The ``cache_control`` ctxwin writes where a request's automatic caching lasts an hour
(:func:`automatic_hour`)."""


def automatic_hour(body: object) -> bool:
    """Whether the request's automatic caching (a top-level ``cache_control``: Anthropic's,
    and LiteLLM's for a chat it sends to Anthropic) lasts an hour: it puts a 1-hour
    breakpoint on the request's last block, and Anthropic refuses a 5-minute one before it
    ("longer TTL must come before shorter"). The breakpoints placed before it then take
    ``ttl: "1h"``, at no cost: the tokens up to the last 1-hour breakpoint are written at
    the hour's price whatever the breakpoints before it."""
    auto = body.get(ANTHROPIC.key) if isinstance(body, Mapping) else None
    return isinstance(auto, Mapping) and auto.get("ttl") == "1h"


def anthropic_envelope_marks(body: object) -> int:
    """The breakpoints of an Anthropic request's system prompt and tools, and the one a
    top-level ``cache_control`` (automatic caching) takes of the four a request may carry."""
    if not isinstance(body, Mapping):
        return 0
    system, tools = body.get("system"), body.get("tools")
    marks = sum(1 for b in system if ANTHROPIC.on_part(b)) if isinstance(system, list) else 0
    marks += isinstance(body.get(ANTHROPIC.key), Mapping)
    return marks + (sum(1 for t in tools if ANTHROPIC.on_part(t)) if isinstance(tools, list) else 0)


def openai_implicit(body: object) -> int:
    """The breakpoint OpenAI places itself: under ``prompt_cache_options.mode: implicit``
    (the default) it writes "up to the latest three explicit breakpoints" of the four a
    request may carry (an earlier one is silently not written); ``explicit``, none."""
    options = body.get("prompt_cache_options") if isinstance(body, Mapping) else None
    mode = options.get("mode") if isinstance(options, Mapping) else None
    return 0 if mode == "explicit" else 1


def _chat_marked(value: object) -> bool:
    """Whether a chat part, message or tool call carries a breakpoint of either kind (a
    mapping under ``cache_control`` or ``prompt_cache_breakpoint``; ``null`` is none)."""
    return isinstance(value, Mapping) and (
        isinstance(value.get(ANTHROPIC.key), Mapping) or isinstance(value.get(OPENAI.key), Mapping)
    )


def _chat_unmarked(value: object) -> object:
    """A chat part or tool call without breakpoints (itself when it has none)."""
    if not isinstance(value, Mapping) or (ANTHROPIC.key not in value and OPENAI.key not in value):
        return value
    return {k: v for k, v in value.items() if k not in (ANTHROPIC.key, OPENAI.key)}


class ChatMarkers:
    """Breakpoints in OpenAI Chat messages, for the OpenAI Chat adapter.

    They are OpenAI's ``prompt_cache_breakpoint`` on content parts, except in a body
    LiteLLM sends to Anthropic (dialect ``"cache_control"``), whose breakpoints are
    Anthropic's ``cache_control`` (:data:`CHAT_CACHE_CONTROL`), which LiteLLM moves into
    the Anthropic request: on content parts; a string content becomes one text part, which
    LiteLLM sends as the same text block (an assistant's stays a string, LiteLLM orders its
    thinking blocks otherwise: an assistant takes one on a part only). Either kind is read
    as a breakpoint, and so is the ``cache_control`` LiteLLM also takes on a message or a
    tool call (``anthropic_messages_pt``); taking a breakpoint away takes away all of them.
    """

    dialect = "cache_control"

    def marked(self, item: Mapping[str, Any]) -> bool:
        content, calls = item.get("content"), item.get("tool_calls")
        return (
            (isinstance(content, list) and any(map(_chat_marked, content)))
            or isinstance(item.get(ANTHROPIC.key), Mapping)
            or (isinstance(calls, list) and any(map(_chat_marked, calls)))
        )

    def set(self, item: dict[str, Any], on: bool | Mapping[str, Any]) -> dict[str, Any]:
        """OpenAI's breakpoint at the end of ``item`` (``cache_control`` ones are placed by
        :meth:`render`, which knows the dialect), or, ``on`` false, none of either kind."""
        if not on:
            item.pop(ANTHROPIC.key, None)
            for key in ("content", "tool_calls"):
                value = item.get(key)
                if isinstance(value, list) and any(map(_chat_marked, value)):
                    item[key] = [_chat_unmarked(v) for v in value]
            return item
        if item.get("role") in ("assistant", "function"):
            return item  # assistant content takes no breakpoint; a function message's is a string
        content = OPENAI.as_parts(item.get("content"))
        if isinstance(content, list):
            item["content"] = OPENAI.marked_list(content, on)
        return item

    def render(self, out: dict[str, Any], msg: Message, conv: Conversation) -> dict[str, Any]:
        """A rendered message that carries a breakpoint with Anthropic's where it had its own
        (``ttl`` kept), or had none and the body's breakpoints are ``cache_control``; the
        render puts OpenAI's on the others, or takes them away. (A message's own marker is
        put back in its own kind, whatever the body: what renders a parsed message, which
        ctxwin's memo may hand another body, depends on the message alone.)"""
        if not msg.cache or self.marked(out):
            return out
        own = CHAT_CACHE_CONTROL.values(msg.raw)
        if not own and (conv.dialect != self.dialect or OPENAI.values(msg.raw)):
            return out
        role, content = out.get("role"), out.get("content")
        if role == "function" or (role == "assistant" and not isinstance(content, list)):
            return out
        content = CHAT_CACHE_CONTROL.as_parts(content)
        if isinstance(content, list):
            on = own[-1] if own else self.default(conv) or True
            out["content"] = CHAT_CACHE_CONTROL.marked_list(content, on)
        return out

    def default(self, conv: Conversation) -> Mapping[str, Any] | None:
        """The breakpoint ctxwin writes on a message that had none of its own, where it is
        not the dialect's default: ``ttl: "1h"`` under automatic caching for an hour
        (:func:`automatic_hour`), in a body whose breakpoints are ``cache_control``."""
        hour = conv.dialect == self.dialect and automatic_hour(conv.source)
        return ONE_HOUR if hour else None

    def envelope_marks(self, body: object, cache_control: bool) -> int:
        """The breakpoints a chat request carries outside its messages: for Anthropic (the
        tools' own or their function's, and a top-level ``cache_control``, automatic
        caching: litellm 1.110.2 ``count_external_cache_breakpoints``), else OpenAI's
        implicit one (:func:`openai_implicit`)."""
        if not cache_control:
            return openai_implicit(body)  # the tools carry none; a system message is a message
        if not isinstance(body, Mapping):
            return 0
        tools = body.get("tools")
        marks = sum(
            1
            for t in (tools if isinstance(tools, list) else ())
            if _chat_marked(t) or (isinstance(t, Mapping) and _chat_marked(t.get("function")))
        )
        return marks + isinstance(body.get(ANTHROPIC.key), Mapping)


CHAT = ChatMarkers()
"""The breakpoints of OpenAI Chat messages (see :class:`ChatMarkers`)."""
