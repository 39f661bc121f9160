"""A request in neutral form: its messages, its format's rules, and its pairing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace

from ctxwin._core.memo import PrefixCache
from ctxwin._core.model import (
    FormatName,
    Loc,
    Message,
    Opaque,
    PairingRules,
    ResultRef,
    Text,
    ToolCall,
    ToolResult,
    call_at,
    result_at,
)
from ctxwin._core.pairing import Linker, Pairing, link

__all__ = ["Conversation", "linked"]

_UNREAD = frozenset({"raw", "pristine", "text", "content", "arguments", "origin"})
"""Fields of a block neither linking nor the check of a round reads (a result's content
only as whether it has any)."""
_READ: dict[type, tuple[str, ...]] = {
    t: tuple(f.name for f in fields(t) if f.name not in _UNREAD)
    for t in (Text, ToolCall, ToolResult, Opaque)
}
"""Per block type, the fields they read."""

Ties = Mapping[str, tuple[int, ...]]
"""For each id of a call the server runs: the messages holding the block that opens it or a
block tied to it (:attr:`~ctxwin._core.model.Opaque.opens`, ``tie``), in order."""


IdKinds = Mapping[str, Mapping[tuple[bool, str], Loc]]
"""For each call id: (a call or not, kind) -> where the first such block with it stands."""


def _id_kinds(messages: tuple[Message, ...]) -> IdKinds:
    found: dict[str, dict[tuple[bool, str], Loc]] = {}
    for mi, msg in enumerate(messages):
        for bi, b in enumerate(msg.blocks):
            if isinstance(b, ToolCall):
                cid, key = b.id, (True, b.kind)
            elif isinstance(b, ToolResult):
                cid, key = b.call_id, (False, b.kind)
            else:
                continue
            if cid is not None:
                found.setdefault(cid, {}).setdefault(key, (mi, bi))
    return found


def _ties(messages: tuple[Message, ...]) -> tuple[Ties, dict[str, int]]:
    """The messages of each server's call, and the first message closing each (its
    :attr:`~ctxwin._core.model.Opaque.closes` block: a server tool's result, a program's
    output)."""
    members: dict[str, list[int]] = {}
    closed: dict[str, int] = {}
    for mi, msg in enumerate(messages):
        for b in msg.blocks:
            ids: tuple[str | None, str | None]
            if isinstance(b, Opaque):
                ids = (b.opens, b.tie)
                if b.closes and b.tie is not None:
                    closed.setdefault(b.tie, mi)
            elif isinstance(b, ToolCall):
                ids = (None, b.tie)
            else:
                continue
            for t in ids:
                if t is not None and members.setdefault(t, [mi])[-1] != mi:
                    members[t].append(mi)
    return {t: tuple(m) for t, m in members.items()}, closed


@dataclass(frozen=True, slots=True, eq=False)
class Conversation:
    """A request in neutral form.

    ``rules`` is the format's :class:`PairingRules`. ``source`` is the body as passed in (a
    dict, a list, or a Responses ``input`` string), kept so the adapter can render
    everything around the messages unchanged; ``envelope`` holds what of it the request
    pays for besides the messages (system prompt, tool definitions), for counting.
    ``server_state`` is true when earlier turns live on the provider's side
    (``previous_response_id``): a result may then answer a call that is not in the request.
    ``dialect`` is a hint the adapter keeps for writing new parts in the body's own style
    (Gemini: ``"camel"`` or ``"snake"`` field names). ``envelope_marks`` counts the cache
    breakpoints the envelope carries (a provider limits them, messages included).
    """

    format: FormatName
    messages: tuple[Message, ...]
    rules: PairingRules
    source: object = field(default=None, repr=False)
    envelope: tuple[object, ...] = field(default=(), repr=False)
    envelope_paths: tuple[str, ...] = field(default=(), repr=False)
    """Where each of ``envelope``'s values is in the body (``tools``,
    ``generationConfig.responseSchema``), which an error inside it names."""
    provider_prompt: int = 0
    """Tokens the provider adds to the request on its own, counted with the envelope
    (Anthropic's tool-use system prompt, when the request offers tools)."""
    server_state: bool = False
    body_server_state: bool = False
    """What the body itself says of server state (``server_state`` may be set otherwise
    by the caller)."""
    dialect: str = ""
    envelope_marks: int = 0
    adapter: object = field(default=None, repr=False)
    """The adapter that parsed it (:func:`ctxwin.formats.adapter_of`): a variant of the
    format renders as the variant (LangChain's messages, LiteLLM's ``thinking_blocks``);
    None for a conversation built by hand, rendered by its format's adapter."""
    """Cache breakpoints outside the messages (on the system prompt, the tools)."""
    _pairing: list[Pairing] = field(default_factory=list, repr=False)
    _ties: list[tuple[tuple[Message, ...], Ties, dict[str, int]]] = field(
        default_factory=list, repr=False
    )
    _kinds: list[tuple[tuple[Message, ...], IdKinds]] = field(default_factory=list, repr=False)

    def with_messages(
        self, messages: tuple[Message, ...], *, same_structure: bool = False
    ) -> Conversation:
        """A conversation with other messages.

        Pass ``same_structure=True`` when only the content of blocks changed (no message or
        block added, removed or moved): the pairing already computed is then reused.
        """
        conv = replace(self, messages=messages, _pairing=[], _ties=[], _kinds=[])
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
            self._pairing.append(link(self.messages, self.rules, self.server_state))
        return self._pairing[0]

    @property
    def ties(self) -> Ties:
        """The server's calls whose blocks a drop must take or leave together (worked out on
        first use, which only drops and the optimum's layout make; cached)."""
        return self._tie_maps()[1]

    @property
    def tie_closed(self) -> Mapping[str, int]:
        """The first message closing each server's call (a server tool's result, a
        program's output): until then the call is open, and its blocks still to come need
        the one that opened it."""
        return self._tie_maps()[2]

    def _tie_maps(self) -> tuple[tuple[Message, ...], Ties, dict[str, int]]:
        got = self._ties
        if not got or got[0][0] is not self.messages:
            got[:] = [(self.messages, *_ties(self.messages))]
        return got[0]

    @property
    def id_kinds(self) -> IdKinds:
        """Per call id, where its first call and its first result of each kind stand
        (worked out on first use, which only the text of a problem naming the block of
        another kind with a call's id makes; cached)."""
        got = self._kinds
        if not got or got[0][0] is not self.messages:
            got[:] = [(self.messages, _id_kinds(self.messages))]
        return got[0][1]

    def call_of(self, loc: Loc) -> ToolCall | None:
        """The call the result at ``loc`` answers, if pairing found one."""
        call_loc = self.pairing.call_of.get(loc)
        return None if call_loc is None else call_at(self.messages, call_loc)

    def tool_of(self, loc: Loc) -> str:
        """The tool name of the result at ``loc``: its call's name, else the wire's, else ``?``."""
        call = self.call_of(loc)
        if call is not None:
            return call.name
        return result_at(self.messages, loc).name or "?"

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
                        call = call_at(self.messages, call_loc)
                        rnd = pairing.round_of_message.get(call_loc[0])
                    yield ResultRef((mi, bi), block, call, rnd)

    def calls(self) -> Iterator[tuple[Loc, ToolCall]]:
        for mi, msg in enumerate(self.messages):
            for bi, block in enumerate(msg.blocks):
                if isinstance(block, ToolCall):
                    yield (mi, bi), block


def linked(conv: Conversation, links: PrefixCache[Linker], key: object) -> Linker:
    """The linker of ``conv``, its pairing set: the one of ``links`` that has seen a prefix
    of its messages (by identity, made under the same ``key``) fed the rest, or a new one;
    kept in ``links`` for the next request of the same history. A prefix whose messages
    differ only in what linking does not read (:func:`read_alike`: a client that sends
    back ctxwin's output, its results edited) serves too."""
    found = links.take(conv.messages, key) or links.take_alike(conv.messages, key, read_alike)
    linker = found[1] if found is not None else Linker(conv.rules, conv.server_state)
    linker.cache_key = key
    linker.feed(conv.messages)
    links.put(conv.messages, linker)
    conv.set_pairing(linker.pairing())
    return linker


def read_alike(a: Message, b: Message) -> bool:
    """Whether linking (:class:`Linker`) and the check of a round (``check.has_errors``,
    whose verdicts a linker keeps) read ``a`` and ``b`` alike: the same roles and blocks,
    the same ids, names, kinds and ties, only the text of their content and arguments
    different (a result capped or cleared, a call's arguments shortened), and a result's
    content present in both or in neither. A linker that has read one reads the other as
    it did."""
    if a is b:
        return True
    if (a.role, a.tied_reasoning, a.item_id, len(a.blocks)) != (
        b.role,
        b.tied_reasoning,
        b.item_id,
        len(b.blocks),
    ):
        return False
    for x, y in zip(a.blocks, b.blocks, strict=True):
        names = _READ.get(type(x))
        if names is None or type(y) is not type(x):
            return False
        if any(getattr(x, n) != getattr(y, n) for n in names):
            return False
        if isinstance(x, ToolResult) and (
            bool(x.content) != bool(y.content) or x.is_empty != y.is_empty  # type: ignore[union-attr]
        ):
            return False
    return True
