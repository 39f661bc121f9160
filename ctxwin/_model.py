"""The neutral conversation: what every step sees, whatever the provider.

A :class:`Conversation` is a tuple of :class:`Message`; a message is a role and a tuple of
blocks: :class:`Text`, :class:`ToolCall`, :class:`ToolResult` and :class:`Opaque` (images,
thinking, reasoning items, server tools, anything unknown — carried untouched).

Every object parsed from a request keeps the wire data it came from in ``raw`` and says
whether it is still exactly as parsed (``pristine``). Adapters render a pristine message by
returning its ``raw`` data unchanged, which is what makes round trips exact and keeps the
parts of a request that no step touched byte-for-byte identical. Editing goes through the
``with_*`` methods, which keep ``raw`` (so the adapter can preserve the fields no step
changed) and clear ``pristine``.

All classes are frozen: steps build new objects, nothing is modified in place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypeAlias, Union

if TYPE_CHECKING:
    from ctxwin._pairing import Pairing

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""Neutral roles. Provider roles map onto these (Gemini ``model`` is ``assistant``)."""

FormatName: TypeAlias = Literal["openai-chat", "anthropic", "openai-responses", "gemini"]
"""The wire formats ctxwin reads and writes."""

FORMATS: tuple[FormatName, ...] = ("openai-chat", "anthropic", "openai-responses", "gemini")

JSONValue: TypeAlias = Union[bool, int, float, str, "list[JSONValue]", "dict[str, JSONValue]", None]


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text."""

    text: str
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Opaque:
    """Content ctxwin does not interpret (image, thinking, reasoning, server tool, unknown).

    ``kind`` names what it is (the wire ``type`` when there is one). It is rendered exactly
    as it came in.
    """

    kind: str
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=True, compare=False, repr=False)


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
    written with the matching wire type.
    """

    id: str | None
    name: str
    arguments: str
    kind: str = "function"
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)

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
    ``{"error": ...}``).
    """

    call_id: str | None
    content: tuple[Part, ...]
    is_error: bool = False
    name: str | None = None
    kind: str = "function"
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)

    @property
    def text(self) -> str:
        """The text parts of the content, joined by newlines."""
        parts = self.content
        if len(parts) == 1 and isinstance(parts[0], Text):
            return parts[0].text
        return "\n".join(p.text for p in parts if isinstance(p, Text))

    @property
    def has_opaque(self) -> bool:
        """Whether the content holds non-text parts (images, documents, references)."""
        return any(isinstance(p, Opaque) for p in self.content)

    @property
    def is_empty(self) -> bool:
        """No content at all, or only empty text."""
        return not any(isinstance(p, Opaque) or p.text for p in self.content)

    def with_text(self, text: str, *, keep_opaque: bool = True) -> ToolResult:
        """The same result with its text replaced; non-text parts kept unless asked not to."""
        opaque = tuple(p for p in self.content if isinstance(p, Opaque)) if keep_opaque else ()
        return replace(self, content=(Text(text), *opaque), pristine=False)


Block: TypeAlias = Text | ToolCall | ToolResult | Opaque


@dataclass(frozen=True, slots=True)
class Message:
    """One unit of the wire list: a chat message, a Responses input item, a Gemini content.

    ``index`` is its position in the request as parsed (``None`` for a message ctxwin made,
    such as a synthetic result), used to report locations.
    """

    role: Role
    blocks: tuple[Block, ...]
    raw: object = field(default=None, compare=False, repr=False)
    pristine: bool = field(default=False, compare=False, repr=False)
    index: int | None = field(default=None, compare=False)

    def with_blocks(self, blocks: tuple[Block, ...]) -> Message:
        """The same message with other blocks (keeps ``raw`` so other fields are preserved)."""
        return replace(self, blocks=blocks, pristine=False)

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


@dataclass(frozen=True, slots=True, eq=False)
class Conversation:
    """A request in neutral form.

    ``source`` is the body as passed in (a dict, a list, or a Responses ``input`` string),
    kept so the adapter can render everything around the messages unchanged.
    ``server_state`` is true when earlier turns live on the provider's side
    (``previous_response_id``): a result may then answer a call that is not in the request.
    ``dialect`` is a hint the adapter keeps for writing new parts in the body's own style
    (Gemini: ``"camel"`` or ``"snake"`` field names).
    """

    format: FormatName
    messages: tuple[Message, ...]
    source: object = field(default=None, repr=False)
    server_state: bool = False
    dialect: str = ""
    _pairing: list[Pairing] = field(default_factory=list, repr=False)

    def with_messages(
        self, messages: tuple[Message, ...], *, same_structure: bool = False
    ) -> Conversation:
        """A conversation with other messages.

        Pass ``same_structure=True`` when only the content of blocks changed (no message or
        block added, removed or moved): the pairing already computed is then reused.
        """
        conv = replace(self, messages=messages, _pairing=[])
        if same_structure and self._pairing:
            conv._pairing.append(self._pairing[0])
        return conv

    def set_pairing(self, pairing: Pairing) -> None:
        """Attach a pairing computed elsewhere (the engine's resumable linker)."""
        self._pairing[:] = [pairing]

    @property
    def pairing(self) -> Pairing:
        """Which result answers which call, the rounds, and what is out of place (cached)."""
        if not self._pairing:
            from ctxwin._pairing import link

            self._pairing.append(link(self))
        return self._pairing[0]

    def results(self) -> Iterator[ResultRef]:
        """Every tool result, in order, with its call and round."""
        pairing = self.pairing
        for mi, msg in enumerate(self.messages):
            for bi, block in enumerate(msg.blocks):
                if isinstance(block, ToolResult):
                    call_loc = pairing.call_of.get((mi, bi))
                    call = None
                    rnd = None
                    if call_loc is not None:
                        b = self.messages[call_loc[0]].blocks[call_loc[1]]
                        assert isinstance(b, ToolCall)
                        call = b
                        rnd = pairing.round_of_message.get(call_loc[0])
                    yield ResultRef((mi, bi), block, call, rnd)

    def calls(self) -> Iterator[tuple[Loc, ToolCall]]:
        for mi, msg in enumerate(self.messages):
            for bi, block in enumerate(msg.blocks):
                if isinstance(block, ToolCall):
                    yield (mi, bi), block
