"""A ``ThinkingPart`` as the model a request goes to reads it, in the Anthropic-shaped body
ctxwin counts (see :mod:`ctxwin.integrations._pydantic_ai_map`).

pydantic-ai sends a thinking part back natively only to a model that accepts its signed or
encrypted data (``Model.accepts_stateless_artifacts``); any other model gets its content as
tagged text, or nothing when it has none. What that costs depends on the model:

- Anthropic (``AnthropicModel``): a signed part is a ``thinking`` block (``redacted_thinking``
  for redacted thinking, its data in ``signature``), counted as ctxwin's Anthropic adapter
  counts the body ``AnthropicModel`` sends.
- OpenAI Responses (``OpenAIResponsesModel``): the parts of one reasoning item (one ``id``,
  a part per summary) are one ``reasoning`` item, which OpenAI reads by its encrypted content
  only (:data:`~ctxwin.formats._responses_items.ENCRYPTED_REASONING`: the summary is not
  read), and not at all in a turn before the user's latest message unless the request reads
  every turn's reasoning (``reasoning.context: all_turns``, which pydantic-ai sends where the
  model takes it, or a model that reads them by default). The block ctxwin counts is a
  stand-in worth exactly what ctxwin's Responses adapter counts for that item's encrypted
  content (:data:`TOKENS`; the item's own overhead is counted with the message, see
  :mod:`~ctxwin.integrations._pydantic_ai_served`).
- Any other model, or none known (a history processor, ``FunctionModel``, and
  ``OpenAIChatModel``): a ``thinking`` block per part, as before.

:func:`reader_of` also says which wire format pydantic-ai sends the model (``served``): the
request's tools, system prompt and per-message overheads are counted as that format has
them (:mod:`~ctxwin.integrations._pydantic_ai_served`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_core import PydanticSerializationError

from ctxwin._feedback.limits import profile_of
from ctxwin.formats._responses_items import ENCRYPTED_REASONING
from ctxwin.integrations._lazy import require

__all__ = [
    "PARTS",
    "TOKENS",
    "Reader",
    "Served",
    "Unsendable",
    "is_tool_call",
    "is_tool_return",
    "media_block",
    "reader_of",
    "response_blocks",
    "result_text",
    "sendable",
    "thinking_blocks",
    "user_turn",
]

Block = dict[str, Any]

_REDACTED = frozenset({"redacted_thinking", "redacted_content"})
"""The ids pydantic-ai gives redacted thinking (Anthropic, Bedrock): its data in ``signature``."""
_ENCRYPTED = "openai_supports_encrypted_reasoning_content"
"""The OpenAI profile key saying a model takes encrypted reasoning back."""
_CHAT_IDS = frozenset({"content", "reasoning", "reasoning_content"})
"""Synthetic ids OpenAI Chat models give a thinking part: no reasoning item of the Responses API."""


Served = Literal["anthropic", "openai-chat", "openai-responses"]
"""The wire format pydantic-ai sends a model of a kind ctxwin knows."""

TOKENS = "tokens"
"""The key of a stand-in block whose string is worth one token per character past the first
(:data:`~ctxwin.integrations._pydantic_ai_served.ADAPTER` counts it so, see there)."""


@dataclass(frozen=True, slots=True)
class Reader:
    """How the model of a request reads it: thinking as ``parts`` (unknown: a block per
    part), ``anthropic`` or ``openai-responses``; ``model`` decides which parts it takes
    natively; ``earlier``: whether it reads the reasoning of turns before the user's latest
    message; ``served``: the wire format pydantic-ai sends it (None: not known); ``gemini``:
    a Google model (:attr:`gemini`)."""

    kind: Literal["parts", "anthropic", "openai-responses"] = "parts"
    model: Any = None
    earlier: bool = True
    tags: tuple[str, str] = ("<think>", "</think>")
    served: Served | None = None
    gemini: bool = False
    """Whether a Google model serves it (its media billed as Gemini bills them)."""

    def key(self, earlier_turn: bool) -> tuple[Any, ...]:
        """What a message's conversion depends on, for a message in an earlier turn or not."""
        if self.kind == "parts" and self.served is None:
            return ()
        return (self.kind, self.served, id(self.model), earlier_turn and not self.earlier)


PARTS = Reader()


def reader_of(model: Any, settings: Any = None) -> Reader:
    """The reader of pydantic-ai ``model`` (wrappers unwrapped) with ``settings`` (the
    request's model settings)."""
    inner = model
    while (wrapped := getattr(inner, "wrapped", None)) is not None:
        inner = wrapped
    names = {c.__name__ for c in type(inner).__mro__}
    profile = getattr(inner, "profile", None)
    tags = _tags(profile)
    if "AnthropicModel" in names:
        return Reader("anthropic", inner, True, tags, "anthropic")
    if "OpenAIResponsesModel" in names:
        earlier = _reads_earlier(inner, settings)
        return Reader("openai-responses", inner, earlier, tags, "openai-responses")
    if "OpenAIChatModel" in names:
        return Reader("parts", inner, True, tags, "openai-chat")
    if "GoogleModel" in names:  # counted in Anthropic's shape, but for its media
        return Reader(gemini=True)
    return PARTS


def _tags(profile: Any) -> tuple[str, str]:
    found = profile.get("thinking_tags") if hasattr(profile, "get") else None
    if isinstance(found, tuple) and len(found) == 2 and all(isinstance(t, str) for t in found):
        return found
    return ("<think>", "</think>")


def _reads_earlier(model: Any, settings: Any) -> bool:
    """Whether an OpenAI Responses request reads earlier turns' reasoning: its
    ``reasoning.context`` as pydantic-ai sets it (``all_turns`` by default where the model
    takes it), else the model's default (ctxwin's profile: ``gpt-5.6`` reads them all)."""
    given = settings.get("openai_reasoning_context") if hasattr(settings, "get") else None
    context = given
    try:
        from pydantic_ai.models.openai._reasoning import set_reasoning_context

        reasoning: dict[str, Any] = {}
        set_reasoning_context(reasoning, given, model.profile)  # type: ignore[arg-type]
        context = reasoning.get("context")
    except Exception:  # another pydantic-ai: what the settings say
        pass
    if context in ("all_turns", "current_turn"):
        return bool(context == "all_turns")
    found = profile_of(getattr(model, "model_name", None))
    return found is not None and found[1].reasoning_context == "all_turns"


def user_turn(parts: Iterable[Any]) -> bool:
    """Whether a request's parts hold a message of the user's own (a prompt, retry feedback
    not tied to a call): a new turn begins with it."""
    for part in parts:
        kind = getattr(part, "part_kind", None)
        if kind in ("user-prompt", "retry-feedback"):
            return True
        if kind == "retry-prompt" and not getattr(part, "tool_name", None):
            return True
    return False


def thinking_blocks(
    reader: Reader, msg: Any, part: Any, earlier_turn: bool, ids: set[str]
) -> list[Block]:
    """The blocks ctxwin counts for thinking part ``part`` of response ``msg`` (none: the
    model reads nothing of it). ``ids``: the reasoning items of ``msg`` already counted."""
    if reader.kind == "parts":
        return [_native(part)]
    native = bool(part.signature) and _accepts(reader, msg, part)
    if reader.kind == "anthropic":
        return [_native(part)] if native else _as_text(reader, part)
    profile: Any = getattr(reader.model, "profile", None)
    native = native and hasattr(profile, "get") and bool(profile.get(_ENCRYPTED, False))
    same = getattr(part, "provider_name", None) == getattr(reader.model, "system", None)
    item = part.id and (part.id not in _CHAT_IDS or native) and (native or same)
    if not item:
        return _as_text(reader, part)
    if part.id in ids or (earlier_turn and not reader.earlier):
        return []  # one item for its summaries, counted once; or an earlier turn's: dropped
    ids.add(part.id)
    sealed = ENCRYPTED_REASONING.tokens({ENCRYPTED_REASONING.key: part.signature})
    if native and sealed is not None:  # worth what OpenAI reads of it (see TOKENS)
        return [{"type": "reasoning", TOKENS: "e" * (sealed + 1)}]
    summaries = [p.content for p in msg.parts if getattr(p, "id", None) == part.id]
    return [{"type": "reasoning", "summary": [s for s in summaries if s]}]


def _accepts(reader: Reader, msg: Any, part: Any) -> bool:
    try:
        return bool(reader.model.accepts_stateless_artifacts(msg, part))
    except Exception:  # another pydantic-ai: signatures go back to the provider that made them
        return getattr(part, "provider_name", None) == getattr(reader.model, "system", None)


def _native(part: Any) -> Block:
    """The block ``AnthropicModel`` sends, its keys in its order (a block ctxwin does not
    read counts as its JSON text)."""
    if part.id in _REDACTED and part.signature:
        return {"data": part.signature, "type": "redacted_thinking"}
    return {"thinking": part.content, "signature": part.signature or "", "type": "thinking"}


def _as_text(reader: Reader, part: Any) -> list[Block]:
    """Thinking the model cannot take natively: its content as tagged text (nothing if empty)."""
    if not part.content:
        return []
    try:  # pydantic-ai's own: in a user turn, framed, where the model mimics its own tags
        from pydantic_ai._thinking_part import render_replayed_thinking

        text = render_replayed_thinking(part.content, reader.model.profile)[0]
    except Exception:  # another pydantic-ai: the model's thinking tags
        start, end = reader.tags
        text = f"{start}\n{part.content}\n{end}"
    return [{"type": "text", "text": text}]


# ------------------------------------------------------------------ a response's parts


def is_tool_call(part: Any) -> bool:
    """A call of a client-run tool (``ToolCallPart`` and its typed subclasses)."""
    kind = str(getattr(part, "part_kind", ""))
    return hasattr(part, "args") and hasattr(part, "tool_call_id") and "builtin" not in kind


def is_tool_return(part: Any) -> bool:
    """A tool return of a request (``ToolReturnPart`` and its typed subclasses)."""
    kind = str(getattr(part, "part_kind", ""))
    return hasattr(part, "outcome") and hasattr(part, "tool_call_id") and "builtin" not in kind


def result_text(part: Any) -> str:
    """A tool return's text as the model reads it, without pydantic-ai's error wrapper
    (:class:`Unsendable` when pydantic-ai cannot write its content as JSON)."""
    return sendable(part, lambda: part.model_response_str(wrap_if_error=False))


def sendable(part: Any, text: Callable[[], object]) -> str:
    """``text()``, the text pydantic-ai sends of ``part``, or :class:`Unsendable` when
    pydantic-ai cannot serialize its content (an object of no known kind, data nested past
    pydantic's depth limit): pydantic-ai raises then, on sending the request."""
    try:
        return str(text())
    except PydanticSerializationError as exc:
        raise Unsendable(part, exc) from exc


class Unsendable(Exception):
    """A part pydantic-ai cannot send: the content of a tool return or a retry prompt with
    no JSON form (``error``: pydantic's ``PydanticSerializationError``)."""

    def __init__(self, part: Any, error: Exception) -> None:
        self.part = part
        self.error = error
        retry = getattr(part, "part_kind", None) == "retry-prompt"
        kind = "retry prompt" if retry else "tool return"
        name = getattr(part, "tool_name", None)
        call = getattr(part, "tool_call_id", None)
        what = f"the {kind} of call {call!r}" + (f" ({name})" if name else "")
        shown = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        super().__init__(
            f"{what} holds content pydantic-ai cannot write as JSON ({shown}): pydantic-ai "
            "would raise this on sending it; return data pydantic can serialize"
        )


def response_blocks(msg: Any, reader: Reader, earlier: bool) -> list[tuple[Block, int]]:
    """The wire blocks of response ``msg``, each with the part it came from: text, thinking
    (as ``reader`` reads it; ``earlier``: ``msg`` is in an earlier turn), tool calls, a
    file the model made as media where the model is sent it back, and provider-run tools
    and compaction counted as text."""
    blocks: list[tuple[Block, int]] = []
    ids: set[str] = set()
    for j, part in enumerate(msg.parts):
        kind = getattr(part, "part_kind", None)
        if kind == "text":
            if part.content:
                blocks.append(({"type": "text", "text": part.content}, j))
        elif kind == "thinking":
            blocks.extend((b, j) for b in thinking_blocks(reader, msg, part, earlier, ids))
        elif is_tool_call(part):
            call = {"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name}
            call["input"] = _args(part)
            blocks.append((call, j))
        elif kind == "file":  # a file the model made: sent back only by a model that makes
            if reader.served is None:  # files (Google's, as inline data); not otherwise
                blocks.append((media_block(part.content), j))
        else:
            text = _text_of(part)
            if text:
                blocks.append(({"type": "text", "text": text}, j))
    return blocks


def media_block(item: Any) -> Block:
    """An image (or another file) as an Anthropic block: counted as media, never edited.
    Inline data (``BinaryContent``) of an image or a PDF is a ``base64`` source, counted as
    the model serving the request bills it (its header's size, its pages: the adapter's,
    see :mod:`~ctxwin.integrations._pydantic_ai_served`); its base64 is made once for each
    message converted (:class:`~ctxwin.integrations._pydantic_ai_map.Mapper` memoizes
    them), since a body holds JSON data only. Any other file, and one by URL or id, counts
    as the flat estimate."""
    if getattr(item, "kind", None) == "image-url":
        return {"type": "image", "source": {"type": "url", "url": item.url}}
    media_type = getattr(item, "media_type", None)
    if hasattr(item, "base64") and isinstance(media_type, str):
        kind = "image" if media_type.startswith("image/") else "document"
        if kind == "image" or media_type == "application/pdf":
            source = {"type": "base64", "media_type": media_type, "data": item.base64}
            return {"type": kind, "source": source}
    url = getattr(item, "url", None) or getattr(item, "file_id", None) or ""
    return {"type": "document", "source": {"type": "url", "url": str(url)}}


def _args(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # arguments that are not a JSON object: carried as text
        return {"arguments": str(part.args)}


def _text_of(part: Any) -> str:
    if getattr(part, "part_kind", None) == "speech":  # sent as a text part of its transcript
        return str(part.transcript or "")
    render = getattr(part, "model_response_str", None)
    if callable(render):
        return str(render())
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    args = getattr(part, "args", None)
    return str(args) if args else ""


def summary_text(part: Any) -> str:
    """The user text pydantic-ai sends for a summary an application wrote into a request
    (a request-side ``CompactionPart``): its content, framed as pydantic-ai frames it."""
    models = require("pydantic_ai.models", "pydantic-ai")  # imported: pydantic-ai runs
    frame = getattr(models, "_conversation_summary_text", None)
    content = getattr(part, "content", None) or ""
    return str(frame(content)) if callable(frame) else str(content)
