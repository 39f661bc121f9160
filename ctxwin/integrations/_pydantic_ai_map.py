"""pydantic-ai messages as an Anthropic Messages body, and ctxwin's edits back onto them.

A ``ModelRequest`` is one user message (its tool returns first, as tool results, then its
user prompt and retry feedback as text and images), a ``ModelResponse`` one assistant
message (text, thinking, tool calls; provider-run tools as text, counted but never edited).
System prompt parts, the request's instructions and its tool definitions count toward the
budget, as the model serving the request is sent them (``system``, ``tools``, leading system
messages; and a stand-in block for the wire messages beyond the first an OpenAI model gets
of one pydantic-ai message: see :mod:`~ctxwin.integrations._pydantic_ai_served`). A tool
return whose ``outcome`` is ``failed`` or ``retried`` is an error result (``is_error``),
never selected away; one pydantic-ai cannot serialize is an :class:`~ctxwin.InputError`
naming the part.

Mapping back goes through the edit map: an unchanged message is the very object pydantic-ai
holds; an edited one is a copy (``dataclasses.replace``) whose edited parts only are copies,
with only their ``content`` (a result) or ``args`` (a call) replaced, and their
``tool_call_id`` where repair renamed a duplicate call id (the call and its return alike).

The conversion of each message is memoized by identity, with a fingerprint of what it held:
a message whose parts were replaced, a part whose fields were reassigned, or data mutated in
place under a part (a dict ``content`` or ``args``, a list of prompt items appended to, a
pydantic model or dataclass a tool returned, down to its nested objects: one snapshot, see
:mod:`ctxwin._core.snapshot`) is converted again.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin._core.model import Opaque, ToolCall, ToolResult
from ctxwin._core.snapshot import Snapshot, matches, snapshot
from ctxwin._exceptions import InputError
from ctxwin._result import Result
from ctxwin.integrations._lazy import require
from ctxwin.integrations._pydantic_ai_edits import added, edited, parts_of, thinking_gone
from ctxwin.integrations._pydantic_ai_parts import (
    PARTS,
    Reader,
    Unsendable,
    is_tool_call,
    is_tool_return,
    media_block,
    response_blocks,
    result_text,
    sendable,
    summary_text,
    user_turn,
)
from ctxwin.integrations._pydantic_ai_served import (
    ADAPTER,
    GEMINI_ADAPTER,
    OVERHEAD,
    Envelope,
    with_overhead,
)

__all__ = [
    "ERROR_OUTCOMES",
    "Mapper",
    "Request",
    "Wire",
    "is_tool_call",
    "is_tool_return",
    "result_text",
]

ERROR_OUTCOMES = frozenset({"failed", "retried"})
"""Tool return outcomes that reach the model as errors (pydantic-ai's ``ERROR_OUTCOMES``)."""

_MAX_MEMO = 200_000
_ATOMS = frozenset({str, int, float, bool, type(None)})

Block = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Wire:
    """One pydantic-ai message as a wire message: the dict, the part each of its blocks came
    from (``None``: a stand-in ctxwin needs, as for a message with nothing to send), and the
    system prompt texts it holds that go into ``system``."""

    message: dict[str, Any]
    parts: tuple[int | None, ...]
    system: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Request:
    """A request as ctxwin gets it: the body, and for each message the one it was made from
    (``sources``: a message itself, or the run's original of a copy ctxwin made earlier)."""

    body: dict[str, Any]
    wires: list[Wire]
    given: list[Any]
    sources: list[Any]
    lead: int = 0
    """The system messages ``body`` begins with (the system prompts and instructions of an
    OpenAI model's request, see :mod:`~ctxwin.integrations._pydantic_ai_served`): the
    ``k``-th message of ``given`` is the body's message ``lead + k``."""
    adapter: Any = "anthropic"
    """The format ctxwin reads ``body`` in: ``anthropic``, for an OpenAI model the adapter
    counting its stand-ins (:data:`~ctxwin.integrations._pydantic_ai_served.ADAPTER`), for a
    Google model the one counting its media as Gemini bills them (``GEMINI_ADAPTER``)."""
    before: tuple[Any, ...] = ()
    """The messages before the latest compaction, which pydantic-ai does not send
    (:func:`_window_start`): handed back as they are."""


class Mapper:
    """Converts pydantic-ai messages to wire messages, memoized by identity (the same dicts
    for the same messages, so ctxwin's own memos hit from one request to the next).

    A history processor's output becomes the history: the copies ctxwin made come back in
    the next request. The mapper remembers the original of each copy and gives ctxwin the
    original, so ctxwin edits the conversation as it was (the same edits, from memo) rather
    than its own output again; a copy with the same edits comes back as the same object. A
    copy (or its original) changed since is no copy any more: it is read as it is now."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, _Print, Wire, tuple[Any, ...]]] = {}
        self._origins: dict[int, tuple[Any, Any, _Print, _Print]] = {}
        self._copies: dict[int, _Copy] = {}
        self._envelope = Envelope()

    def wire(self, msg: Any, reader: Reader = PARTS, earlier: bool = False) -> Wire:
        """``msg`` as a wire message for a model reading thinking as ``reader`` says
        (``earlier``: ``msg`` is in a turn before the user's latest message)."""
        key = reader.key(earlier)
        hit = self._memo.get(id(msg))
        if hit is not None and hit[0] is msg and hit[3] == key and hit[1].holds(msg):
            return hit[2]
        seen = _print(msg)
        response = getattr(msg, "kind", None) == "response"
        wire = _response(msg, reader, earlier) if response else _request(msg)
        message, parts = with_overhead(wire.message, wire.parts, reader.served)
        if message is not wire.message:
            wire = Wire(message, parts, wire.system)
        if len(self._memo) >= _MAX_MEMO:
            self._memo.clear()
        self._memo[id(msg)] = (msg, seen, wire, key)
        return wire

    def source(self, msg: Any) -> Any:
        """The message ``msg`` is a copy of (``msg`` itself when it is no copy of ours)."""
        hit = self._origins.get(id(msg))
        if hit is None or hit[0] is not msg:
            return msg
        copy, original, copy_print, original_print = hit
        if copy_print.holds(copy) and original_print.holds(original):
            return original
        del self._origins[id(msg)]
        return msg

    def request(
        self, messages: Sequence[Any], params: Any = None, reader: Reader = PARTS
    ) -> Request:
        """The Anthropic-shaped request of ``messages`` (with the instructions and tools of
        ``params``, a ``ModelRequestParameters``, when given), counted as the model
        ``reader`` describes is sent it and reads it (its thinking, its tools, its wire
        messages: see :mod:`~ctxwin.integrations._pydantic_ai_served`)."""
        every = list(messages)
        start = _window_start(every, reader.model)
        given = every[start:]
        sources = [self.source(m) for m in given]
        turn = max((k for k, m in enumerate(sources) if _opens_turn(m)), default=-1)
        wires: list[Wire] = []
        for k, m in enumerate(sources):
            try:
                wires.append(self.wire(m, reader, k < turn))
            except Unsendable as exc:
                j = next(j for j, p in enumerate(m.parts) if p is exc.part)
                at = f"messages[{start + k}].parts[{j}]"  # the run's, not the request's
                raise InputError(str(exc), path=at) from exc.error
        prompts = [s for w in wires for s in w.system]
        if start:  # the standing system prompt, which pydantic-ai sends again
            prompts[:0] = next((self.wire(m).system for m in every if _is_request(m)), ())
        envelope = self._envelope.parts(params, prompts, reader)
        body: dict[str, Any] = {"messages": [*envelope.lead, *(w.message for w in wires)]}
        body.update(envelope.keys)
        openai = reader.served in ("openai-chat", "openai-responses")
        adapter = ADAPTER if openai else GEMINI_ADAPTER if reader.gemini else "anthropic"
        lead = len(envelope.lead)
        return Request(body, wires, given, sources, lead, adapter, tuple(every[:start]))

    def apply(self, request: Request, result: Result) -> list[Any]:
        """The messages as ctxwin sends them: the same objects where kept, copies where
        edited, new messages where ctxwin added one (a result for a call that had none)."""
        conv = result.conversation
        out: list[Any] = list(request.before)
        elsewhere = parts_of(request)
        for change in result.edit_map.messages:
            neutral = conv.messages[change.index]
            if change.source is None:
                out.append(added(neutral, change.index, result, elsewhere))
                continue
            src = change.source - request.lead
            if src < 0 or _stand_ins(neutral.blocks):
                continue  # a system message of an OpenAI model's request, or nothing left
            original = request.sources[src]
            if change.change == "kept":
                out.append(original)
                continue
            new = self._copy(request, src, neutral.blocks, change, result, elsewhere)
            given = request.given[src]
            fresh = given is not original and given is not new
            if fresh and _same(_fingerprint(given), _fingerprint(new)):
                new = given  # the copy made last time, with the same edits
            self._remember(new, original)
            out.append(new)
        return out

    def _copy(
        self,
        request: Request,
        src: int,
        blocks: Sequence[Any],
        change: Any,
        result: Result,
        elsewhere: Callable[[object], Any],
    ) -> Any:
        """The edited copy of the ``src``-th message: the one made before while the original,
        the edits and that copy are what they were (old messages are edited alike each time)."""
        original, wire = request.sources[src], request.wires[src]
        key = _edit_key(blocks, change, wire)
        made = self._copies.get(id(original))
        if made is not None and made.serves(original, wire, key):
            return made.copy
        new = edited(original, wire, blocks, change.blocks, change.index, result, elsewhere)
        if len(self._copies) >= _MAX_MEMO:
            self._copies.clear()
        self._copies[id(original)] = _Copy(original, wire, key, new, _print(new))
        return new

    def _remember(self, new: Any, original: Any) -> None:
        """That ``new`` is a copy of ``original`` (see :meth:`source`)."""
        known = self._origins.get(id(new))  # a copy made for an earlier request: known
        if known is None or known[0] is not new or known[1] is not original:
            if len(self._origins) >= _MAX_MEMO:
                self._origins.clear()
            self._origins[id(new)] = (new, original, _print(new), _print(original))


@dataclass(frozen=True, slots=True)
class _Print:
    """What a message's conversion read: its parts (by identity), each part's fields (by
    identity, then equality), and one snapshot of the data its parts hold: dicts and lists,
    and objects read through their fields (a tool's pydantic model or dataclass, an
    ``ImageUrl`` in a prompt's list), so a mutation in place shows. A field equal to the
    one read is that data, unchanged (the snapshot), or data equal to it."""

    parts: tuple[Any, ...]
    fields: tuple[tuple[Any, ...], ...]
    containers: list[Any]
    data: Snapshot | None

    def holds(self, msg: Any) -> bool:
        """Whether ``msg`` holds what it held when this print was taken."""
        parts = tuple(getattr(msg, "parts", ()))
        if len(parts) != len(self.parts) or not all(map(operator.is_, parts, self.parts)):
            return False
        if tuple(map(_fields, parts)) != self.fields:
            return False
        return self.data is None or matches(self.containers, self.data)


@dataclass(frozen=True, slots=True)
class _Copy:
    """An edited copy of ``original`` (converted to ``wire``) for the edits ``key`` says."""

    original: Any
    wire: Wire
    key: tuple[Any, ...]
    copy: Any
    made: _Print

    def serves(self, original: Any, wire: Wire, key: tuple[Any, ...]) -> bool:
        """Whether this copy is what editing ``original`` by ``key`` makes now."""
        return (
            self.original is original
            and self.wire is wire
            and self.key == key
            and self.made.holds(self.copy)
        )


def _edit_key(blocks: Sequence[Any], change: Any, wire: Wire) -> tuple[Any, ...]:
    """What :func:`~ctxwin.integrations._pydantic_ai_edits.edited` reads of a message's
    edit: the changed blocks, each block's id, text or arguments, and (blocks added or
    dropped: a repair, thinking removed) its position and the thinking parts removed."""
    values = tuple(
        (b.call_id, b.name, b.text, b.pristine, any(isinstance(p, Opaque) for p in b.content))
        if isinstance(b, ToolResult)
        else (b.id, b.arguments, b.pristine)
        if isinstance(b, ToolCall)
        else None
        for b in blocks
    )
    if len(blocks) == len(wire.parts):
        return tuple(change.blocks), None, values
    return tuple(change.blocks), (change.index, thinking_gone(wire, blocks)), values


def _fields(obj: object) -> tuple[Any, ...]:
    held = getattr(obj, "__dict__", None)
    if isinstance(held, dict):
        return tuple(held.items())
    if dataclasses.is_dataclass(obj):
        return tuple((f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj))
    return ()


def _print(msg: Any) -> _Print:
    """The print of ``msg``: the fields of its parts and of the objects in their lists, and
    the data they hold (containers, and objects read through their fields: a tool's return
    value kept as it returned it, a pydantic model or a dataclass; what a snapshot covers)."""
    parts = tuple(getattr(msg, "parts", ()))
    fields = tuple(map(_fields, parts))
    data = [v for f in fields for _, v in f if isinstance(v, (list, dict, tuple)) or _held(v)]
    return _Print(parts, fields, data, snapshot(data) if data else None)


def _stand_ins(blocks: Sequence[Any]) -> bool:
    """Whether ``blocks`` are stand-ins only (the overhead of wire messages ctxwin dropped
    the content of: see :mod:`~ctxwin.integrations._pydantic_ai_served`)."""
    return bool(blocks) and all(isinstance(b, Opaque) and b.kind == OVERHEAD for b in blocks)


def _held(value: object) -> bool:
    """Whether a part's field holds an object a snapshot reads through its fields (a pydantic
    model, a dataclass instance; see :mod:`ctxwin._core.snapshot`): one changed in place is
    seen. Others (a ``datetime``, an object of no known kind) are compared by equality."""
    return (
        type(value) not in _ATOMS
        and isinstance(getattr(value, "__dict__", None), dict)
        and (callable(getattr(type(value), "model_dump", None)) or dataclasses.is_dataclass(value))
    )


def _fingerprint(msg: Any) -> tuple[Any, ...]:
    parts = tuple(getattr(msg, "parts", ()))
    return (
        parts,
        tuple(getattr(p, "content", None) for p in parts),
        tuple(getattr(p, "args", None) for p in parts),
        tuple(getattr(p, "outcome", None) for p in parts),
    )


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(
        len(x) == len(y) and all(i is j or i == j for i, j in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True)
    )


# ------------------------------------------------------------------ to the wire


def _is_request(msg: Any) -> bool:
    return getattr(msg, "kind", None) == "request"


def _window_start(messages: Sequence[Any], model: Any) -> int:
    """Where what pydantic-ai sends ``model`` begins: the response holding the latest
    compaction its adapter replays from (pydantic-ai's own test: an adapter that honors
    compaction boundaries, a part it can send back, with its payload); 0 otherwise, or when
    that test cannot be asked (then all is counted: never less than is sent). A summary an
    application wrote into a request cuts nothing: it is sent as text."""
    if not getattr(model, "_honors_compaction_boundaries", False):
        return 0
    boundary = getattr(require("pydantic_ai.messages", "pydantic-ai"), _BOUNDARY, None)
    for k in range(len(messages) - 1, -1, -1):
        msg = messages[k]
        for part in () if _is_request(msg) else reversed(getattr(msg, "parts", ())):
            if getattr(part, "part_kind", None) != "compaction" or not callable(boundary):
                continue
            try:
                needs = bool(getattr(model, "compaction_requires_encrypted_content", False))
                if boundary(
                    msg, part, model.accepts_stateless_artifacts, requires_encrypted_content=needs
                ):
                    return k
            except Exception:
                return 0
    return 0


_BOUNDARY = "_compaction_part_is_wire_boundary"
"""pydantic-ai's test of a compaction part its adapter trims at (private: when it is gone,
nothing is cut)."""


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _request(msg: Any) -> Wire:
    results: list[tuple[Block, int]] = []
    others: list[tuple[Block, int]] = []
    system: list[tuple[Block, int]] = []
    for j, part in enumerate(msg.parts):
        kind = getattr(part, "part_kind", None)
        if kind == "system-prompt":
            system.append((_text(str(part.content)), j))
        elif is_tool_return(part):
            results.append((_tool_result(part), j))
        elif kind == "retry-prompt" and getattr(part, "tool_name", None):
            block = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": sendable(part, part.model_response),
                "is_error": True,
            }
            results.append((block, j))
        elif kind in ("retry-prompt", "retry-feedback"):
            others.append((_text(sendable(part, part.model_response)), j))
        elif kind == "user-prompt":
            others.extend((b, j) for b in _user_blocks(part.content))
        elif kind == "compaction":  # an application's summary: sent as text that frames it
            others.append((_text(summary_text(part)), j))
        elif kind == "instruction-delta":  # sent as a <pyai:context> element (counted whole)
            others.append((_text(part.render()), j))
        elif kind == "speech" and part.transcript:  # sent as a user prompt of its transcript
            others.append((_text(part.transcript), j))
        # settings and tool-availability deltas reach no model as content
    blocks = results + others
    texts: tuple[str, ...] = tuple(str(b["text"]) for b, _ in system)
    if not blocks:  # system prompts alone: they stand in the message itself
        blocks, texts = system, ()
    if not blocks:
        return Wire({"role": "user", "content": [_text("(empty)")]}, (None,))
    return Wire(
        {"role": "user", "content": [b for b, _ in blocks]}, tuple(j for _, j in blocks), texts
    )


_LOADS = frozenset({"tool-search", "capability-load"})
"""Tool returns pydantic-ai reads back when it prepares the next request (the tools a
search discovered, the capability loaded): their typed content must stay as it is."""


def _tool_result(part: Any) -> Block:
    text = result_text(part)
    files = list(getattr(part, "files", ()) or ())
    content: object = (
        [_text(text), *(media_block(f) for f in files)] if files else [_text(text)] if text else ""
    )
    if getattr(part, "tool_kind", None) in _LOADS:  # a result that loads tools: never edited
        loads = {"type": "tool_reference", "tool_name": part.tool_name}
        content = [*content, loads] if isinstance(content, list) else [loads]
    block: Block = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": content}
    if part.outcome in ERROR_OUTCOMES:
        block["is_error"] = True
    return block


def _user_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [_text(content)]
    out: list[Block] = []
    for item in content:
        kind = getattr(item, "kind", None)
        if isinstance(item, str):
            out.append(_text(item))
        elif kind in ("text-content", "structured-content"):
            out.append(_text(str(item.content)))
        elif kind != "cache-point":
            out.append(media_block(item))
    return out


def _opens_turn(msg: Any) -> bool:
    """A request holding a message of the user's own: a new turn begins with it."""
    return getattr(msg, "kind", None) != "response" and user_turn(getattr(msg, "parts", ()))


def _response(msg: Any, reader: Reader, earlier: bool) -> Wire:
    blocks = response_blocks(msg, reader, earlier)
    if not blocks:
        return Wire({"role": "assistant", "content": [_text("(empty)")]}, (None,))
    return Wire(
        {"role": "assistant", "content": [b for b, _ in blocks]}, tuple(j for _, j in blocks)
    )


# ------------------------------------------------------------------ and back
