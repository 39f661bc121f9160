"""LangChain messages through the OpenAI Chat adapter, and ctxwin's output back onto them.

LangChain messages (``SystemMessage``, ``HumanMessage``, ``AIMessage`` with ``tool_calls``,
``ToolMessage``...) map one to one onto OpenAI Chat messages, so a LangChain history is
sent through ctxwin as a Chat body (:meth:`LangChainMessages.body`), and the edited body
comes back as LangChain messages (:meth:`LangChainMessages.back`) through the edit map:

- a message ctxwin kept is the very object the framework holds;
- an edited one is ``model_copy`` of it with only the edited content replaced, so its
  ``id``, ``name``, ``status``, ``artifact``, metadata and every content block ctxwin did not
  touch (images, ``cache_control``...) stay as they are. Content blocks are put in the Chat
  body as the very dicts LangChain holds, so an untouched block comes back as itself;
- a message ctxwin made (a synthetic result of a call that has none) is built by the
  caller's :class:`Factory`.

A call is read from ``tool_calls`` and ``invalid_tool_calls`` (or, on a message that has
neither, the legacy ``function_call`` of its ``additional_kwargs``, which a
``FunctionMessage`` answers). Content blocks that repeat a call (Anthropic's ``tool_use``,
the standard ``tool_call``, the OpenAI Responses API's ``function_call`` and
``custom_tool_call``) are counted with the call, and carry its edited arguments back. Such a
block whose id no ``tool_calls`` entry has is a call of its own, as its chat model sends it
(an ``AIMessage`` built from Anthropic's content blocks, an older stored history): read from
the block, it goes back in the block only (see
:func:`~ctxwin.formats._lc_calls.block_calls`). A result repair would drop as an orphan while
another block of an earlier AI message holds its id is a :class:`FormatError` at that block
(:meth:`LangChainMessages.check_drops`).

Reasoning stays where the chat model put it: content blocks (Anthropic's ``thinking``, the
Responses API's ``reasoning``...) are parts of the message, and the reasoning item
ChatOpenAI's ``output_version="v0"`` keeps in ``additional_kwargs`` is the Chat message's
``reasoning`` field, which counts with it. The body goes through
:class:`~ctxwin.formats._lc_chat.LangChainChatAdapter`, which reads them as their provider
does.

``ToolMessage.status == "error"`` is an error result: its Chat message carries
``"status": "error"``, which :class:`~ctxwin.formats._lc_chat.LangChainChatAdapter` reads as
that result's error flag. The flag is the message's own, not its call id's: a call id used
again in a later turn (``call_0`` every turn, as some backends number them) does not make
the other results of that id errors. Nothing here imports LangChain: messages are read by
their attributes, copied by their own ``model_copy``.

Each message converts to the same dict for as long as it is unchanged (its content, calls,
status... are the same objects), so the engine's memos keep hitting across requests: a
history that grew by a round is parsed and counted for that round only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

from ctxwin._core.conversation import Conversation
from ctxwin._core.edit_map import EditMap
from ctxwin._core.memo import ENTRIES, Memo
from ctxwin._core.model import Message, Opaque, Text, ToolCall, ToolResult
from ctxwin._core.records import Fix
from ctxwin._core.snapshot import snapshot
from ctxwin._exceptions import FormatError
from ctxwin.formats._lc_calls import (
    block_calls,
    call_blocks,
    held_elsewhere,
    lc_calls,
    lc_invalid,
    repeats,
)
from ctxwin.formats._lc_chat import ERROR, STATUS, LangChainChatAdapter
from ctxwin.formats._markers import OPENAI

__all__ = ["ChatBody", "Factory", "LangChainChatAdapter", "LangChainMessages", "role_of_message"]

_ROLES = {
    "system": "system",
    "developer": "developer",
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "function": "function",
}


class Factory(Protocol):
    """Builds the LangChain messages ctxwin adds (an integration passes one)."""

    def tool(self, call_id: str, name: str | None, content: object, is_error: bool) -> object:
        """A tool message answering ``call_id``."""

    def function(self, name: str, content: object) -> object:
        """A function message answering the legacy ``function_call`` of ``name``."""

    def message(self, role: str, content: object) -> object:
        """Any other message (``role`` is the Chat role: ``user``, ``system``...)."""


@dataclass(frozen=True, slots=True)
class ChatBody:
    """A LangChain request as an OpenAI Chat body.

    ``sources[i]`` is the LangChain message of ``body["messages"][i]`` (the system message
    first when there is one).
    """

    body: dict[str, Any]
    sources: tuple[object, ...]
    system: bool


def role_of_message(msg: object, index: int) -> str:
    """The Chat role of a LangChain message (``AIMessageChunk`` is ``assistant``...)."""
    kind = getattr(msg, "type", None)
    if kind == "chat":
        kind = getattr(msg, "role", None)
    if isinstance(kind, str) and kind.endswith("MessageChunk"):
        kind = kind[: -len("MessageChunk")].lower()
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        raise FormatError(
            f"a {type(msg).__name__} (type {kind!r}) is not a LangChain message ctxwin can "
            "send: expected system, human, ai or tool messages",
            path=f"messages[{index}]",
        )
    return role


def _fingerprint(msg: object) -> tuple[object, ...]:
    """What a converted message depends on: reassigning any of it, or changing its content
    blocks or calls in place (LangChain messages are mutable, and so are the lists and
    dicts they hold), converts the message again. Its non-empty lists, and a legacy
    ``function_call`` or v0 ``reasoning`` of its ``additional_kwargs``, are compared by one
    snapshot (every object reachable from them, see :mod:`ctxwin._core.snapshot`): an
    argument edited inside a call's ``args`` is seen. A pydantic message's fields are read
    from its ``__dict__``: ``getattr`` of a field the class lacks goes through pydantic's
    slow ``__getattr__``, most of a request's conversion time."""
    fields = getattr(msg, "__dict__", None)
    get: Callable[[str], object] = (
        fields.get if isinstance(fields, dict) else lambda key: getattr(msg, key, None)
    )
    held = [get(key) for key in _HELD]
    lists: list[object] = [value for value in held if isinstance(value, list) and value]
    kwargs = get("additional_kwargs")
    if type(kwargs) is dict and kwargs:
        lists += [v for k in _KWARGS if (v := kwargs.get(k)) is not None]
    return (
        type(msg),
        *map(id, held),
        snapshot(lists) if lists else None,
        get("tool_call_id"),
        get("status"),
        get("name"),
    )


_LEGACY = "function_call"
"""The key of a legacy call in a message's ``additional_kwargs``, and in a Chat message."""
_HELD = ("content", "tool_calls", "invalid_tool_calls")
"""The fields of a message that may hold lists and dicts."""
_REASONING = "reasoning"
"""The key of ChatOpenAI's v0 reasoning item in ``additional_kwargs`` (it sends it back as
the turn's first item), and of the Chat message field that counts it."""
_KWARGS = (_LEGACY, _REASONING)
"""The entries of ``additional_kwargs`` a converted message holds."""


def _content(content: object, ids: Collection[object] = ()) -> object:
    """LangChain content as Chat content: the very list when it holds dicts only (so its
    blocks are the wire parts), bare strings in a list as text parts; blocks that repeat
    one of the calls ``ids`` left out (the calls carry them)."""
    if not isinstance(content, list):
        return content
    if all(isinstance(b, Mapping) for b in content):
        if ids and any(repeats(b, ids) for b in content):
            return [b for b in content if not repeats(b, ids)]
        return content
    return [
        b if isinstance(b, Mapping) else {"type": "text", "text": str(b)}
        for b in content
        if not repeats(b, ids)
    ]


def _calls(calls: Sequence[Mapping[str, Any]], index: int) -> list[dict[str, Any]]:
    """Chat tool calls. An invalid call (``invalid_tool_calls``: the model's arguments were
    no JSON) carries its arguments as the text the model wrote: LangChain's chat models
    send it as a call like any other, and its error ``ToolMessage`` answers it."""
    return [
        {
            "id": c.get("id"),
            "type": "function",
            "function": {"name": c.get("name"), "arguments": _arguments(c, index, k)},
        }
        for k, c in enumerate(calls)
    ]


def _arguments(call: Mapping[str, Any], index: int, k: int) -> str:
    """A call's ``args`` as the JSON text its chat model sends, or a :class:`FormatError`
    at the call for ``args`` that are no JSON (a ``datetime``, an object of the user's
    own...): the model could not be sent them either."""
    args = call.get("args", {})
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise FormatError(
            f"the arguments of tool call {call.get('id')!r} are not JSON: {exc}",
            path=f"messages[{index}].tool_calls[{k}].args",
        ) from None


def _all_calls(msg: object, index: int) -> list[Mapping[str, Any]]:
    """An AI message's calls as its chat model sends them: ``tool_calls``, the invalid,
    then those only its content blocks hold (``index``: its place, where an unreadable
    block is a :class:`FormatError`)."""
    listed = [*(getattr(msg, "tool_calls", None) or ()), *_invalid(msg)]
    if role_of_message(msg, index) != "assistant":
        return listed
    ids = {c.get("id") for c in listed}
    return [*listed, *(c for _, c in block_calls(getattr(msg, "content", None), ids, index))]


def _invalid(msg: object) -> list[Mapping[str, Any]]:
    return list(getattr(msg, "invalid_tool_calls", None) or ())


def _legacy_of(kwargs: object) -> Mapping[str, Any] | None:
    """The ``function_call`` in a message's ``additional_kwargs``, if any."""
    call = kwargs.get(_LEGACY) if isinstance(kwargs, Mapping) else None
    return call if isinstance(call, Mapping) else None


def _legacy_call(msg: object, index: int) -> Mapping[str, Any] | None:
    """The call of the legacy function-calling API a message makes (``additional_kwargs``
    ``function_call``, which ChatOpenAI sends and a ``FunctionMessage`` answers), when it
    has no tool calls (Gemini's messages repeat their tool calls there)."""
    if _all_calls(msg, index):
        return None
    return _legacy_of(getattr(msg, "additional_kwargs", None))


def _to_chat(msg: object, index: int) -> dict[str, Any]:
    role = role_of_message(msg, index)
    calls = _all_calls(msg, index) if role == "assistant" else None
    ids = {c.get("id") for c in calls} if calls else ()
    out: dict[str, Any] = {"role": role, "content": _content(getattr(msg, "content", ""), ids)}
    name = getattr(msg, "name", None)
    if isinstance(name, str) and name:
        out["name"] = name
    if role == "tool":
        out["tool_call_id"] = getattr(msg, "tool_call_id", None)
        if getattr(msg, "status", None) == ERROR:
            out[STATUS] = ERROR
    legacy = _legacy_call(msg, index) if role == "assistant" and not calls else None
    if calls:
        out["tool_calls"] = _calls(calls, index)
    elif legacy is not None:
        out[_LEGACY] = {"name": legacy.get("name"), "arguments": legacy.get("arguments")}
    if (calls or legacy is not None) and out["content"] in ("", []):
        out["content"] = None
    reasoning = _kwarg(msg, _REASONING) if role == "assistant" else None
    if isinstance(reasoning, Mapping):
        out[_REASONING] = reasoning
    return out


def _kwarg(msg: object, key: str) -> object:
    """The entry ``key`` of a message's ``additional_kwargs``, if any."""
    kwargs = getattr(msg, "additional_kwargs", None)
    return kwargs.get(key) if isinstance(kwargs, Mapping) else None


class LangChainMessages:
    """Converts LangChain messages to a Chat body and ctxwin's output back (see the module).

    One converter serves one agent's requests: it remembers each message's dict, and the
    dict of each message id. A checkpointer gives a graph fresh copies of its messages at
    each run: a copy whose dict equals the one its id had is given that very dict, which
    the engine's memos know (see :meth:`_known`).
    """

    def __init__(self) -> None:
        self._memo = Memo(ENTRIES)
        self._by_id: dict[str, dict[str, Any]] = {}

    def _dict(self, msg: object, index: int) -> dict[str, Any]:
        key = _fingerprint(msg)
        hit = self._memo.get(msg)
        if isinstance(hit, tuple) and hit[0] == key:
            found: dict[str, Any] = hit[1]
            return found
        out = self._known(msg, _to_chat(msg, index))
        self._memo.put(msg, (key, out))
        return out

    def _known(self, msg: object, out: dict[str, Any]) -> dict[str, Any]:
        """The dict an earlier message of ``msg``'s id converted to when it equals ``out``,
        else ``out`` (remembered for that id). Only for a dict with no content list: it
        then holds strings and dicts of its own only, nothing of the message it came from,
        so an equal one stands for any message."""
        mid = getattr(msg, "id", None)
        if not isinstance(mid, str) or isinstance(out.get("content"), list):
            return out
        if _LEGACY in out or _REASONING in out:
            return out
        by_id = self._by_id
        seen = by_id.get(mid)
        if seen is not None and seen == out:
            return seen
        by_id[mid] = out
        if len(by_id) > ENTRIES:
            self._by_id = dict(islice(by_id.items(), len(by_id) - ENTRIES // 2, None))
        return out

    def body(
        self,
        messages: Sequence[object],
        system: object | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        response_format: Mapping[str, Any] | None = None,
    ) -> ChatBody:
        """The Chat body of a LangChain request (``system``: its system message; the
        ``response_format`` of its structured output, when the model is sent one)."""
        sources = ((system,) if system is not None else ()) + tuple(messages)
        items = [self._dict(m, i) for i, m in enumerate(sources)]
        body: dict[str, Any] = {"messages": items}
        if tools:
            body["tools"] = list(tools)
        if response_format is not None:
            body["response_format"] = response_format
        return ChatBody(body, sources, system is not None)

    def back(
        self,
        chat: ChatBody,
        conv: Conversation,
        wire: Sequence[object],
        edits: EditMap,
        factory: Factory,
    ) -> list[object]:
        """The messages ctxwin sends, as LangChain messages (see the module)."""
        names = {c.id: c.name for m in conv.messages for c in m.tool_calls}
        out: list[object] = []
        for change in edits.messages:
            if change.change == "kept" and change.source is not None:
                out.append(chat.sources[change.source])
                continue
            msg = conv.messages[change.index]
            item = wire[change.index]
            sent = item if isinstance(item, Mapping) else {}
            if change.source is None:
                out.append(_added(msg, sent, names, factory))
            elif not change.blocks:
                out.append(chat.sources[change.source])  # only a cache marker moved
            else:
                given = chat.body["messages"][change.source]
                out.append(_edited(chat.sources[change.source], msg, sent, given, change.source))
        return out

    def check_drops(self, chat: ChatBody, fixes: Sequence[Fix]) -> None:
        """A :class:`FormatError` when repair dropped, as an orphan, a result whose call id
        a content block of an earlier AI message holds (see
        :func:`~ctxwin.formats._lc_calls.held_elsewhere`)."""
        held_elsewhere(chat.sources, fixes, lambda m, i: role_of_message(m, i) == "assistant")


def _plain_content(content: object, original: object) -> object:
    """Wire content without ctxwin's cache markers, as a string where it was one."""
    if not isinstance(content, list):
        return content
    parts = [OPENAI.cleared(p) for p in content]
    if (
        isinstance(original, str)
        and len(parts) == 1
        and isinstance(parts[0], Mapping)
        and set(parts[0]) == {"type", "text"}
    ):
        return parts[0]["text"]
    return parts


def _added(
    msg: Message, sent: Mapping[str, Any], names: Mapping[str | None, str], factory: Factory
) -> object:
    content = _plain_content(sent.get("content"), "")
    result = msg.blocks[0] if msg.blocks else None
    if isinstance(result, ToolResult) and result.call_id is not None:
        name = result.name or names.get(result.call_id)
        return factory.tool(result.call_id, name, content, result.is_error)
    if isinstance(result, ToolResult) and sent.get("role") == "function":
        return factory.function(result.name or names.get(None) or "", content)
    return factory.message(str(sent.get("role", msg.role)), content)


def _edited(
    original: Any, msg: Message, sent: Mapping[str, Any], given: Mapping[str, Any], index: int
) -> object:
    """``original`` (the body's ``messages[index]``) with the content ctxwin edited, and
    nothing else, replaced. A call read from a content block only goes back in that block
    (:func:`~ctxwin.formats._lc_calls.call_blocks`), not in ``tool_calls``."""
    update: dict[str, Any] = {}
    old = original.content
    if msg.role == "tool":
        (result,) = msg.tool_results
        if not result.pristine:
            update["content"] = _plain_content(sent.get("content"), old)
        if result.call_id is not None and result.call_id != original.tool_call_id:
            update["tool_call_id"] = result.call_id
        return original.model_copy(update=update) if update else original
    calls = msg.tool_calls
    every = _all_calls(original, index)
    legacy = None if every else _legacy_call(original, index)
    if legacy is not None:  # the legacy call, in additional_kwargs
        if not all(c.pristine for c in calls):
            call = {**legacy, "arguments": calls[0].arguments}
            update["additional_kwargs"] = {**original.additional_kwargs, _LEGACY: call}
        calls = ()
    parts = [b for b in msg.blocks if isinstance(b, (Text, Opaque))]
    if not all(p.pristine for p in parts) or len(parts) != _n_parts(given.get("content")):
        content = _plain_content(sent.get("content"), old)
        ids = {c.get("id") for c in every}
        repeated = [b for b in old if repeats(b, ids)] if isinstance(old, list) else []
        if repeated:
            content = [*(content if isinstance(content, list) else ()), *repeated]
        update["content"] = "" if content is None else content
    changed = any(not c.pristine for c in calls)
    if changed or len(calls) != len(every):
        found = _call_sources(every, calls, given)
        valid = len(original.tool_calls or ())
        end = valid + len(_invalid(original))  # then the calls of content blocks
        pairs = [(c, k, f) for c, (k, f) in zip(calls, found, strict=True)]
        update["tool_calls"] = lc_calls([(c, f) for c, k, f in pairs if k < valid])
        if end > valid:
            kept = [(c, f) for c, k, f in pairs if valid <= k < end and f is not None]
            update["invalid_tool_calls"] = [lc_invalid(c, f) for c, f in kept]
        base = update.get("content", old)
        if isinstance(base, list) and changed:
            update["content"] = call_blocks(base, calls)
    return original.model_copy(update=update) if update else original


def _call_sources(
    every: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall], given: Mapping[str, Any]
) -> list[tuple[int, Mapping[str, Any] | None]]:
    """For each of ``calls``, its position among the message's calls ``every``
    (``tool_calls``, the invalid ones, those of content blocks) and the LangChain dict it was
    read from: by the very Chat dict it was parsed from (two calls of one turn may share an
    id, which repair renames); -1 and None for a call ctxwin made."""
    listed = given.get("tool_calls") or ()
    at = {id(d): k for k, d in enumerate(listed)}
    out: list[tuple[int, Mapping[str, Any] | None]] = []
    for call in calls:
        k = at.get(id(call.raw), -1)
        out.append((k, every[k]) if 0 <= k < len(every) else (-1, None))
    return out


def _n_parts(content: object) -> int:
    """How many parts the Chat adapter reads in a message's ``content``."""
    if isinstance(content, list):
        return len(content)
    return 1 if isinstance(content, str) else 0
