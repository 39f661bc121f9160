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
  stand-in worth what ctxwin's Responses adapter counts for that item.
- Any other model, or none known (a history processor, ``FunctionModel``): a ``thinking``
  block per part, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ctxwin._feedback.limits import profile_of
from ctxwin.formats._responses_items import ENCRYPTED_REASONING

__all__ = [
    "PARTS",
    "Reader",
    "is_tool_call",
    "is_tool_return",
    "reader_of",
    "response_blocks",
    "result_text",
    "thinking_blocks",
    "user_turn",
]

Block = dict[str, Any]

_REDACTED = frozenset({"redacted_thinking", "redacted_content"})
"""The ids pydantic-ai gives redacted thinking (Anthropic, Bedrock): its data in ``signature``."""
_BLOB = 256
"""A stand-in string longer than this counts one token per four characters (the meter's
opaque strings)."""
_ENCRYPTED = "openai_supports_encrypted_reasoning_content"
"""The OpenAI profile key saying a model takes encrypted reasoning back."""
_CHAT_IDS = frozenset({"content", "reasoning", "reasoning_content"})
"""Synthetic ids OpenAI Chat models give a thinking part: no reasoning item of the Responses API."""


@dataclass(frozen=True, slots=True)
class Reader:
    """How the model of a request reads thinking: ``parts`` (unknown: a block per part),
    ``anthropic`` or ``openai-responses``; ``model`` decides which parts it takes natively;
    ``earlier``: whether it reads the reasoning of turns before the user's latest message."""

    kind: Literal["parts", "anthropic", "openai-responses"] = "parts"
    model: Any = None
    earlier: bool = True
    tags: tuple[str, str] = ("<think>", "</think>")

    def key(self, earlier_turn: bool) -> tuple[Any, ...]:
        """What a message's conversion depends on, for a message in an earlier turn or not."""
        if self.kind == "parts":
            return ()
        return (self.kind, id(self.model), earlier_turn and not self.earlier)


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
        return Reader("anthropic", inner, True, tags)
    if "OpenAIResponsesModel" in names:
        return Reader("openai-responses", inner, _reads_earlier(inner, settings), tags)
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
    if native and sealed is not None:
        # a long string counts one token per four characters; a short one is tokenized,
        # " e" a token each (o200k_base, cl100k_base; a word each for a word counter)
        stand_in = "e" * (4 * sealed) if 4 * sealed > _BLOB else " e" * sealed
        return [{"type": "reasoning", "encrypted_content": stand_in}]
    summaries = [p.content for p in msg.parts if getattr(p, "id", None) == part.id]
    return [{"type": "reasoning", "summary": [s for s in summaries if s]}]


def _accepts(reader: Reader, msg: Any, part: Any) -> bool:
    try:
        return bool(reader.model.accepts_stateless_artifacts(msg, part))
    except Exception:  # another pydantic-ai: signatures go back to the provider that made them
        return getattr(part, "provider_name", None) == getattr(reader.model, "system", None)


def _native(part: Any) -> Block:
    if part.id in _REDACTED and part.signature:
        return {"type": "redacted_thinking", "data": part.signature}
    return {"type": "thinking", "thinking": part.content, "signature": part.signature or ""}


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
    """A tool return's text as the model reads it, without pydantic-ai's error wrapper."""
    return str(part.model_response_str(wrap_if_error=False))


def response_blocks(msg: Any, reader: Reader, earlier: bool) -> list[tuple[Block, int]]:
    """The wire blocks of response ``msg``, each with the part it came from: text, thinking
    (as ``reader`` reads it; ``earlier``: ``msg`` is in an earlier turn), tool calls, and
    provider-run tools, files and compaction counted as text."""
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
        else:
            text = _text_of(part)
            if text:
                blocks.append(({"type": "text", "text": text}, j))
    return blocks


def _args(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # arguments that are not a JSON object: carried as text
        return {"arguments": str(part.args)}


def _text_of(part: Any) -> str:
    render = getattr(part, "model_response_str", None)
    if callable(render):
        return str(render())
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    args = getattr(part, "args", None)
    return str(args) if args else ""
