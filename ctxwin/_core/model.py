"""The neutral conversation: what every step sees, whatever the provider.

A conversation (``conversation.py``) is a tuple of :class:`Message`; a message is a role
and a tuple of blocks: :class:`Text`, :class:`ToolCall`, :class:`ToolResult` and
:class:`Opaque` (images, thinking, reasoning items, server tools, anything unknown —
carried untouched).

Every object parsed from a request keeps the wire data it came from in ``raw`` and says
whether it is still exactly as parsed (``pristine``). Adapters render a pristine message by
returning its ``raw`` data unchanged, which is what makes round trips exact and keeps the
parts of a request that no step touched byte-for-byte identical. Editing goes through the
``with_*`` methods, which keep ``raw`` (so the adapter can preserve the fields no step
changed) and clear ``pristine``.

What differs between formats reaches the core as data: each conversation carries its
format's :class:`PairingRules`, and each opaque part the neutral ``category`` its adapter
gave it. All classes are frozen: steps build new objects, nothing is modified in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

__all__ = [
    "FORMATS",
    "Block",
    "FormatName",
    "Loc",
    "Message",
    "NotKept",
    "Opaque",
    "OpaqueCategory",
    "PairingRules",
    "Part",
    "ResultRef",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "call_at",
    "earlier_reasoning",
    "is_plain_text",
    "is_reasoning_item",
    "is_user_text",
    "opens_turn",
    "result_at",
    "speaks",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""Neutral roles. Provider roles map onto these (Gemini ``model`` is ``assistant``)."""

FormatName: TypeAlias = Literal["openai-chat", "anthropic", "openai-responses", "gemini"]
"""The wire formats ctxwin reads and writes."""

FORMATS: tuple[FormatName, ...] = ("openai-chat", "anthropic", "openai-responses", "gemini")

NotKept: TypeAlias = Literal["store_down", "over_max_bytes", "full"]
"""Why the store did not keep a shortened result's original (:attr:`ToolResult.not_kept`):
it failed, or it is up and refused the value (over ``max_bytes``, or full)."""

OpaqueCategory: TypeAlias = Literal["media", "reasoning", "fixed", "other"]
"""What an opaque part is, neutrally: ``media`` (an image, document, audio or file: counted
as a fixed estimate), ``reasoning`` (a reasoning item of its own, which the window's
``clear_reasoning`` may drop), ``fixed`` (content the model needs as it is, such as the tool
definitions a tool search loaded: counted, and a result holding it is never cleared),
``other`` (thinking blocks, server tools, unknown parts)."""


@dataclass(frozen=True, slots=True)
class PairingRules:
    """Where a format wants tool results, stated neutrally by its adapter.

    - ``turn``: ``"message"`` when each assistant message with calls is its own round
      (chat messages, Anthropic, Gemini), ``"consecutive"`` when a run of assistant items is
      one turn (Responses items: reasoning, function_call, function_call...).
    - ``placement``: ``"adjacent"`` — result messages directly after the turn, nothing
      between (OpenAI Chat); ``"next_message"`` — all results in the one message right after
      the turn (Anthropic, Gemini); ``"anywhere_after"`` — anywhere later (Responses).
    - ``carrier``: results travel one per message, or grouped in one message.
    - ``carrier_role``: the neutral role of a message that carries results.
    - ``results_first``: results must come before any other block in their message.
    - ``ids_optional``: calls may have no id (Gemini); results then pair by order and name.
    - ``strict_ids``: a result without an id answers only a call without one (OpenAI Chat: a
      legacy ``function`` message answers a ``function_call``, never a tool call of its
      name); without it an id-less result answers a call of its name whatever the call's id
      (Gemini).
    - ``answers``: which kinds of result answer which kinds of call, as (result
      :attr:`~ToolResult.kind`, call :attr:`~ToolCall.kind`) pairs; a result answers no call
      of another kind, even one with its id (Responses: each output type answers its own
      call type, "No tool output found for function call ..." for a ``function_call``
      answered by a ``custom_tool_call_output``). ``None``: any kind answers any kind (one
      result type on the wire).
    - ``program_outputs``: a program the server runs may have its calls answered by outputs
      that leave out the call's id (Responses: a ``function_call_output`` with ``caller``
      and no ``call_id``, carried as the program's item): a call a program made, without a
      result of its own, counts as answered once an item of its program follows it (the
      program went on past it).
    - ``results_need_content``: a result with an id must carry content; none at all (OpenAI
      Chat: ``content`` null, absent or an empty list) is refused, empty text is not.
    - ``merge_split_turns``: repair makes consecutive assistant messages with calls one
      message, their blocks in order (Gemini: a model's parallel calls come in one content,
      only the first carrying its thought signature, and each content is a step whose first
      call needs one; python-genai's streaming chat records each chunk as a content of its
      own, the signed one first: chunks in another order are joined as they stand).
    - ``repeat_results``: kinds of call that may have more than one result: a further
      result of a kind that answers the call, anywhere after it, is one more output of that
      call, not a duplicate (Responses: Codex's code mode answers its ``exec``, a
      ``custom_tool_call``, with a ``custom_tool_call_output`` per ``notify()`` and one for
      its final result, all with the call's ``call_id``, openai/codex#41820,
      lidge-jun/opencodex#3731; a ``notify()`` may come after later items,
      gakonst/nanocodex#129). A second result for a call of another kind is a duplicate
      (Responses: "Duplicate function_call_output for call_id ...",
      NousResearch/hermes-agent#102629).
    - ``unique_ids``: call ids must be unique in the whole request, not only within a turn
      (Anthropic: "`tool_use` ids must be unique", for ids repeated across assistant
      messages too, NVIDIA-NeMo/Switchyard#502, openclaw/openclaw#43370): a call whose id an
      earlier turn's call has is a ``duplicate_call_id``, and repair renames it. Without it,
      ids may repeat across turns (OpenAI Chat: real traces do, and the API takes them).
    - ``first_role``: the role the first non-system message must have (``None``: any);
      ``"user"`` with ``first_calls_only``: only where that message holds calls (Gemini:
      "Please ensure that function call turn comes immediately after a user turn or after a
      function response turn", google-gemini/gemini-cli#11814), and not under server state.
    - ``turn_openers``: opaque kinds the provider requires first in the first assistant
      message after the user's latest message, when that message begins with one
      (Anthropic with thinking on: ``thinking``, ``redacted_thinking``; "a final assistant
      message must start with a thinking block"): drops keep that message.
    """

    turn: Literal["message", "consecutive"]
    placement: Literal["adjacent", "next_message", "anywhere_after"]
    carrier: Literal["one_per_message", "grouped"]
    carrier_role: Role
    results_first: bool = False
    ids_optional: bool = False
    strict_ids: bool = False
    answers: frozenset[tuple[str, str]] | None = None
    program_outputs: bool = False
    results_need_content: bool = False
    merge_split_turns: bool = False
    repeat_results: frozenset[str] = frozenset()
    unique_ids: bool = False
    first_role: Role | None = None
    first_calls_only: bool = False
    turn_openers: frozenset[str] = frozenset()

    def kind_answers(self, result: str, call: str) -> bool:
        """Whether a result of kind ``result`` may answer a call of kind ``call``
        (:attr:`answers`)."""
        return self.answers is None or (result, call) in self.answers


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text."""

    text: str
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Opaque:
    """Content ctxwin does not interpret (image, thinking, reasoning, server tool, unknown).

    ``kind`` names what it is (the wire ``type`` when there is one); ``category`` says what
    it is neutrally (see :data:`OpaqueCategory`). It is rendered exactly as it came in.
    """

    kind: str
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=True, compare=False, repr=False)
    category: OpaqueCategory = field(default="other", compare=False)
    opens: str | None = field(default=None, compare=False)
    """The id of a call the server runs that this block makes (an Anthropic
    ``server_tool_use``, a Responses ``program``): every block tied to it comes after it."""
    tie: str | None = field(default=None, compare=False)
    """The id of the server's call this block answers or was made by (a server tool's
    result, an item a program made): it goes and stays with the block that opens it."""
    closes: bool = field(default=False, compare=False)
    """The block ends the server's call it is tied to (a server tool's result, a program's
    output): before it, the call is open and a drop must not take its opening block."""
    needs_next: bool = field(default=False, compare=False)
    """The block must be followed by an item of its model turn (a Responses reasoning item
    with an item id: "Item 'rs_...' of type 'reasoning' was provided without its required
    following item"): with none of the model's items after it, the provider refuses it."""


Part: TypeAlias = Text | Opaque
"""What a tool result's content is made of."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call made by the assistant.

    ``arguments`` is the arguments as JSON text (free text for custom tools), whatever the
    wire carries (a JSON string in OpenAI formats, an object in Anthropic and Gemini).
    ``id`` is ``None`` when the format allows calls without ids (Gemini).
    ``kind`` is ``"function"`` for ordinary function tools; adapters name other client-run
    call types with it (``"custom"``, ``"local_shell"``...) so a synthetic result can be
    written with the matching wire type. ``tied_reasoning`` is true when the provider
    requires the call to come with the reasoning item before it (Responses item ids).
    ``typed`` is true when the provider checks the arguments against a schema of its own (a
    Responses built-in call's ``action``, whose ``command`` is an array of strings): an edit
    of them keeps every value's JSON type.
    """

    id: str | None
    name: str
    arguments: str
    kind: str = "function"
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)
    tied_reasoning: bool = field(default=False, compare=False)
    tie: str | None = field(default=None, compare=False)
    """The id of the server's call that made this call (a program run by the server, see
    :attr:`Opaque.opens`): it goes and stays with the block that opens it."""
    typed: bool = field(default=False, compare=False)

    def with_arguments(self, arguments: str) -> ToolCall:
        """The same call with other arguments (JSON text)."""
        return replace(self, arguments=arguments, pristine=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call.

    ``call_id`` is the id of the call it answers (``None`` in Gemini without ids, where
    results pair by order and name). ``name`` is the tool name the wire carries with the
    result, if any; the name resolved from the call is on :class:`ResultRef`.
    ``is_error`` is the format's error flag, or an error the format carries (Gemini
    ``{"error": ...}``), or what an integration knows (a framework's error status).
    """

    call_id: str | None
    content: tuple[Part, ...]
    is_error: bool = False
    name: str | None = None
    kind: str = "function"
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)
    origin: str | None = field(default=None, compare=False, repr=False)
    """The recall handle of the original content, once a step shortened it with recall on
    (later steps, the window, quote the same handle); ``""`` when the store could not keep
    the original (nothing may then quote a handle for this result)."""
    not_kept: NotKept | None = field(default=None, compare=False, repr=False)
    """With ``origin`` ``""``: why the store did not keep the original, so that a later
    edit of the result (the window clearing it) says the same as the step that shortened
    it."""

    @property
    def text(self) -> str:
        """The text parts of the content, joined by newlines."""
        parts = self.content
        if len(parts) == 1 and isinstance(parts[0], Text):
            return parts[0].text
        return "\n".join(p.text for p in parts if isinstance(p, Text))

    @property
    def loads_tools(self) -> bool:
        """It holds what loads tool definitions (a tool search's ``tool_reference``:
        ``fixed``): no placeholder or cut can stand for it, so no step edits it."""
        return any(isinstance(p, Opaque) and p.category == "fixed" for p in self.content)

    @property
    def is_empty(self) -> bool:
        """No content at all, or only empty text."""
        return not any(isinstance(p, Opaque) or p.text for p in self.content)

    def with_text(self, text: str, *, keep_opaque: bool = True) -> ToolResult:
        """The same result with its text replaced; non-text parts kept unless asked not to,
        in their places: the new text stands where the first text part stood (an image
        before the text stays before it).

        The new text keeps the wire fields of the last text part it replaces (a cache marker,
        say): an edit touches only the text."""
        parts = self.content
        last = next((p for p in reversed(parts) if isinstance(p, Text)), None)
        raw = last.raw if last is not None and isinstance(last.raw, Mapping) else None
        content: tuple[Part, ...] = (Text(text, raw=raw),)
        if keep_opaque and not (len(parts) == 1 and last is not None):  # else text alone
            first = next((i for i, p in enumerate(parts) if isinstance(p, Text)), 0)
            content = (
                *(p for p in parts[:first] if isinstance(p, Opaque)),
                *content,
                *(p for p in parts[first:] if isinstance(p, Opaque)),
            )
        return ToolResult(  # built directly: replace() is slow on the window's cold pass
            self.call_id,
            content,
            self.is_error,
            self.name,
            self.kind,
            self.raw,
            False,
            self.origin,
            self.not_kept,
        )

    def with_error(self, is_error: bool) -> ToolResult:
        """The same result with another error flag (content untouched)."""
        return replace(self, is_error=is_error, pristine=False)


Block: TypeAlias = Text | ToolCall | ToolResult | Opaque


@dataclass(frozen=True, slots=True)
class Message:
    """One unit of the wire list: a chat message, a Responses input item, a Gemini content.

    ``index`` is its position in the request as parsed (``None`` for a message ctxwin made,
    such as a synthetic result), used to report locations. ``cache`` says whether the
    message carries a prompt-cache breakpoint (Anthropic ``cache_control``, OpenAI
    ``prompt_cache_breakpoint``): the prefix up to its end is to be cached.
    ``tied_reasoning`` is true when the provider requires the message to come with the
    reasoning item before it in its turn (a Responses output item with an item id, such
    as ``msg_...``), as :attr:`ToolCall.tied_reasoning` says of a call.
    """

    role: Role
    blocks: tuple[Block, ...]
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)
    index: int | None = field(default=None, compare=False)
    cache: bool = field(default=False, compare=False)
    tied_reasoning: bool = field(default=False, compare=False)
    item_id: str | None = field(default=None, compare=False)
    """The provider's own id of the item (a Responses ``rs_``, ``fc_``, ``msg_``...), which
    the provider wants unique in the request; None where there is none."""

    def with_blocks(self, blocks: tuple[Block, ...]) -> Message:
        """The same message with other blocks (keeps ``raw`` so other fields are preserved)."""
        return Message(  # built directly: replace() is slow on the window's cold pass
            *(self.role, blocks, self.raw, False, self.index, self.cache, self.tied_reasoning),
            self.item_id,
        )

    def with_cache(self, cache: bool) -> Message:
        """The same message with or without a cache breakpoint at its end."""
        return self if cache == self.cache else replace(self, cache=cache, pristine=False)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))


Loc: TypeAlias = tuple[int, int]
"""A block's location in a conversation: (message position, block position)."""


def call_at(messages: Sequence[Message], loc: Loc) -> ToolCall:
    """The call at ``loc`` (a location pairing found, so it is a call)."""
    block = messages[loc[0]].blocks[loc[1]]
    if not isinstance(block, ToolCall):
        raise TypeError(f"no tool call at {loc}: {type(block).__name__}")
    return block


def result_at(messages: Sequence[Message], loc: Loc) -> ToolResult:
    """The result at ``loc`` (a location pairing found, so it is a result)."""
    block = messages[loc[0]].blocks[loc[1]]
    if not isinstance(block, ToolResult):
        raise TypeError(f"no tool result at {loc}: {type(block).__name__}")
    return block


def is_reasoning_item(msg: Message) -> bool:
    """A message that is nothing but a reasoning item (OpenAI Responses)."""
    blocks = msg.blocks
    return len(blocks) == 1 and isinstance(blocks[0], Opaque) and blocks[0].category == "reasoning"


def is_user_text(msg: Message) -> bool:
    """A message of the user's own (not tool results): where a new turn of the user begins."""
    return msg.role == "user" and not any(isinstance(b, ToolResult) for b in msg.blocks)


def speaks(msg: Message) -> bool:
    """A user message holding words of the user's own: one of its own (:func:`is_user_text`),
    or text after the tool results in their message, which is where Anthropic asks for the
    user's next words sent with results (Claude Code sends a user's interjection so), and
    where Gemini likewise has a text part after the ``functionResponse`` parts. The latter
    begins no turn of the user's (:func:`is_user_text`): the agent's run of calls goes on."""
    return msg.role == "user" and (
        is_user_text(msg) or any(isinstance(b, Text) for b in msg.blocks)
    )


def is_plain_text(msg: Message) -> bool:
    """A message of text (images may come with it), with no call or result in it: first in
    a history with no message of the user's own, it holds the task (the OpenAI Agents SDK's
    nested handoff history is one such assistant message), and drops keep it."""
    blocks = msg.blocks
    return any(isinstance(b, Text) for b in blocks) and not any(
        isinstance(b, ToolCall | ToolResult) for b in blocks
    )


def opens_turn(msg: Message, rules: PairingRules) -> bool:
    """Whether ``msg`` is an assistant message beginning with a block the provider requires
    first in its turn (:attr:`PairingRules.turn_openers`)."""
    blocks = msg.blocks
    return (
        msg.role == "assistant"
        and bool(blocks)
        and isinstance(blocks[0], Opaque)
        and blocks[0].kind in rules.turn_openers
    )


def earlier_reasoning(messages: Sequence[Message]) -> list[int]:
    """The reasoning items before the latest message of the user's own: those of earlier
    turns, which a provider that drops them (OpenAI, see
    :attr:`~ctxwin.tokens._meter.Overheads.drops_earlier_reasoning`) neither reads nor bills."""
    latest = next((k for k in range(len(messages) - 1, -1, -1) if is_user_text(messages[k])), -1)
    return [k for k in range(latest) if is_reasoning_item(messages[k])]


@dataclass(frozen=True, slots=True)
class ResultRef:
    """A tool result with what pairing learned about it."""

    loc: Loc
    result: ToolResult
    call: ToolCall | None
    round: int | None

    @property
    def tool(self) -> str:
        """The tool's name: from the call it answers, else as the wire carries it."""
        if self.call is not None:
            return self.call.name
        return self.result.name or "?"
