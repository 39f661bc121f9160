"""What every wire-format adapter provides, and the parts they share.

An adapter turns a request body into a neutral :class:`Conversation` and back. It keeps the
original dicts: a pristine message renders as the very object it came from, and an edited
one is rebuilt from its original with only the edited fields replaced. It also tells the
core what it needs as data: the format's :class:`PairingRules` (on the conversation), the
paths and provider texts of problems (it is the core's :class:`~ctxwin._core.check.
Describer`), the neutral category of each opaque part, and the tokens a message costs
beyond its content.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import MAX_DEPTH, compact_json
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import (
    FormatName,
    Loc,
    Message,
    Opaque,
    OpaqueCategory,
    PairingRules,
    Part,
    Role,
    Text,
)
from ctxwin._core.records import ProblemCode
from ctxwin._core.snapshot import Fingerprints, same, snapshot
from ctxwin._exceptions import FormatError
from ctxwin.formats._objects import TooDeep, Unreadable, plain
from ctxwin.formats._rendered import (
    Rendered,
    kept,
    read_again,
    remembered,
    render_content,
    resumed,
    wire_part,
)
from ctxwin.tokens._meter import Overheads

__all__ = [
    "Adapter",
    "ParseState",
    "compact_json",
    "json_type",
    "render_content",
    "require",
    "role_of",
    "wire_part",
]


@dataclass
class ParseState:
    """What parsing a message list left for the next request of the same history."""

    messages: list[Message] = field(default_factory=list)
    prints: Fingerprints = field(default_factory=Fingerprints)
    refers: list[int] = field(default_factory=list)
    """The positions of the messages that stand for items on the provider's side
    (:meth:`Adapter.refers_to_server`), kept as the history grows: no request scans it all."""

    def truncate(self, n: int) -> None:
        del self.messages[n:]
        self.prints.truncate(n)
        del self.refers[bisect.bisect_left(self.refers, n) :]


class Adapter(ABC):
    """One wire format."""

    name: ClassVar[FormatName]
    variant: ClassVar[str] = ""
    """What sets this adapter apart from the format's own where it parses or counts otherwise
    (LangChain's Chat messages): a policy keeps its parses, pairings and meters per
    :attr:`cache_name`, so one policy may serve both."""
    rules: ClassVar[PairingRules]
    container: ClassVar[str]
    """The body key that holds the message list (``messages``, ``input``, ``contents``)."""
    wire_roles: ClassVar[frozenset[str]] = frozenset()
    """The ``role`` values its messages may carry (for the hint of an undetected body)."""
    overheads: ClassVar[Overheads] = Overheads()
    """Tokens each message and each request cost beyond their content, as documented, and
    the fields of a wire message that parsing leaves out of its blocks but the provider
    reads (``Overheads.unparsed``: OpenAI Chat's ``name``, DeepSeek's ``reasoning_content``;
    none in the other formats)."""
    envelope_keys: ClassVar[tuple[str, ...]] = ("tools",)
    """Body keys outside the message list the request pays for (system, tools, output schema)."""
    system_keys: ClassVar[tuple[str, ...]] = ()
    """Of :attr:`envelope_keys`, those of the system prompt (none where it is a message)."""
    media_words: ClassVar[tuple[str, ...]] = ("image", "document", "file")
    """An opaque part whose kind contains one of these is media (a fixed token estimate)."""

    @property
    def cache_name(self) -> str:
        """The format's name, with its :attr:`variant` if any: what a policy's memos are
        kept by."""
        return f"{self.name}/{self.variant}" if self.variant else self.name

    # ---------------------------------------------------------------- detection

    @abstractmethod
    def detect(self, body: object) -> int:
        """How surely ``body`` (a request dict or a bare list) is of this format.

        0: it is not; 1: it could be (nothing rules it out); 2: it has a marker only this
        format has (a ``tool_use`` block, a ``function_call`` item, ``parts``...).
        """

    # ---------------------------------------------------------------- parse

    def items_of(self, body: object) -> Sequence[object]:
        """The message list of a body (or the bare list itself)."""
        if isinstance(body, Mapping):
            items = body.get(self.container)
            if not isinstance(items, list):
                raise FormatError(
                    f"{self.container!r} must be a list, not {type(items).__name__}",
                    path=self.container,
                    format=self.name,
                )
            return items
        if isinstance(body, list):
            return body
        raise FormatError(
            f"a {self.name} request is a JSON object or a list, not {type(body).__name__}",
            format=self.name,
        )

    def path(self, index: int | None) -> str:
        return f"{self.container}[{'?' if index is None else index}]"

    def parse(
        self,
        body: object,
        memo: Memo | None = None,
        prefix: PrefixCache[ParseState] | None = None,
    ) -> Conversation:
        """``body`` as a conversation. ``memo`` and ``prefix`` (kept by a policy) let a history
        that grew, or parts from an earlier one late, be parsed from there; a message changed
        in place since (see :mod:`ctxwin._core.snapshot`) is parsed again."""
        items = self.items_of(body)
        state = ParseState()
        start = 0
        if prefix is not None:
            found = prefix.common(items)
            if found is not None:
                start, state = found
                state.truncate(start)
                changed = state.prints.changed(items, start)
                for i in changed:
                    state.messages[i] = self._parse_one(items[i], i, None)[0]
                if changed:  # changed in place: which of them refer to the server, again
                    refers = self.refers_to_server
                    state.refers = [k for k, m in enumerate(state.messages) if refers(m)]
        for i in range(start, len(items)):
            raw = items[i]
            hit = memo.get(raw, i) if memo is not None else None
            if isinstance(hit, tuple) and (hit[1] is None or same(snapshot([raw]), hit[1])):
                msg = hit[0]
                state.prints.items.append(hit[1])
            else:
                msg, snap = self._parse_one(raw, i, state.prints)
                if memo is not None:
                    memo.put(raw, (msg, snap), i)
            state.messages.append(msg)
            if self.refers_to_server(msg):
                state.refers.append(i)
        if prefix is not None:
            state.prints.seal(items)
            prefix.put(items, state)
        return self.conversation(body, tuple(state.messages), bool(state.refers))

    def _parse_one(
        self, raw: object, i: int, prints: Fingerprints | None
    ) -> tuple[Message, list[object] | None]:
        data = self.plain_item(raw, i)
        msg = self.parse_message(data, i)
        if self.marker_of(data):
            msg = dataclasses.replace(msg, cache=True)
        snap = snapshot([raw])  # an SDK object too, through its fields
        if prints is not None:
            prints.items.append(snap)
        return msg, snap

    def conversation(
        self, body: object, messages: tuple[Message, ...], refers: bool | None = None
    ) -> Conversation:
        """The conversation of ``body`` holding ``messages`` (parsed from it; ``refers``:
        whether one of them stands for items on the provider's side, None: not known)."""
        server_state = self.server_state(body, refers)
        envelope = self.envelope(body)
        return Conversation(
            format=self.name,
            messages=messages,
            rules=self.rules,
            source=body,
            envelope=tuple(value for _, value in envelope),
            envelope_paths=tuple(path for path, _ in envelope),
            envelope_marks=self.envelope_marks(body),
            server_state=server_state,
            body_server_state=server_state,
            dialect=self.dialect(body),
            adapter=self,
        )

    def envelope(self, body: object) -> tuple[tuple[str, object], ...]:
        """What the request pays for besides its messages (``envelope_keys``), by path."""
        if not isinstance(body, Mapping):
            return ()
        return tuple((k, v) for k in self.envelope_keys if (v := body.get(k)) is not None)

    def system(self, body: object) -> tuple[object, ...]:
        """The system prompt, where the format keeps it apart from the messages: the values
        of ``system_keys`` (what tells conversations apart where their first messages are
        alike; the tools may change within one)."""
        if not isinstance(body, Mapping):
            return ()
        return tuple(v for k in self.system_keys if (v := body.get(k)) is not None)

    def envelope_marks(self, body: object) -> int:
        """Cache breakpoints on the system prompt and the tools (where a format has them)."""
        return 0

    def listed(self, body: object) -> object:
        """``body`` with its messages as a list (a Responses ``input`` string becomes one
        user message), for code that slices histories, such as the replay."""
        return body

    def reads_earlier_reasoning(self, body: object) -> bool | None:
        """Whether the request says the provider reads the reasoning of earlier turns,
        which :attr:`Overheads.drops_earlier_reasoning` says it drops (None: it does not
        say; the model's profile does)."""
        return None

    def server_state(self, body: object, refers: bool | None = None) -> bool:
        """Whether earlier turns live on the provider's side (calls may be absent).
        ``refers``: whether the parsed messages hold one that stands for items there
        (:meth:`refers_to_server`), when the caller knows (None: look in ``body``)."""
        return False

    def refers_to_server(self, msg: Message) -> bool:
        """Whether a parsed message stands for items on the provider's side (an item
        reference): the request then builds on server state."""
        return False

    def dialect(self, body: object) -> str:
        """A style hint kept on the conversation for writing new parts (see Conversation)."""
        return ""

    def plain_item(self, raw: object, index: int) -> Mapping[str, Any]:
        """One element of the message list as plain data: SDK objects become dicts (see
        :mod:`ctxwin.formats._objects`), anything else unreadable is a FormatError naming
        its type and where it is."""
        try:
            data = plain(raw, self.from_object)
        except Unreadable as e:
            where = self.path(index) + "".join(
                f".{k}" if isinstance(k, str) else f"[{k}]" for k in e.where
            )
            raise FormatError(e.said(), path=where, format=self.name) from None
        except TooDeep:
            raise FormatError(
                f"nested more than {MAX_DEPTH} levels deep: not a request ctxwin can read",
                path=self.path(index),
                format=self.name,
            ) from None
        if not isinstance(data, Mapping):
            raise FormatError(
                f"each element must be a JSON object, not {json_type(data)}",
                path=self.path(index),
                format=self.name,
            )
        return data

    def from_object(self, data: dict[str, Any]) -> dict[str, Any]:
        """The dict an SDK object in the message list became, cleaned of the fields a
        response carries and a request does not take (overridden per format)."""
        return data

    @abstractmethod
    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        """One wire message as a neutral message (raise FormatError with the path if bad)."""

    def category(self, kind: str) -> OpaqueCategory:
        """The neutral category of an opaque part of this kind."""
        low = kind.lower()
        return "media" if any(w in low for w in self.media_words) else "other"

    def opaque(self, kind: str, raw: object) -> Opaque:
        """An opaque part carried untouched, with its category."""
        return Opaque(kind, raw=raw, category=self.category(kind))

    def parts(
        self,
        parts: list[Any],
        path: str,
        *,
        text_types: Collection[str] = ("text",),
        what: str = "a content part",
        fallback: str = "unknown",
    ) -> tuple[Part, ...]:
        """A list of content parts: text parts as :class:`Text`, anything else
        :class:`Opaque` (kept as it is). ``path`` is the list's JSON path, for errors."""
        out: list[Part] = []
        for k, part in enumerate(parts):
            require(
                isinstance(part, Mapping),
                f"{what} must be an object, not {json_type(part)}",
                path=f"{path}[{k}]",
                format=self.name,
            )
            kind = part.get("type")  # any JSON value: an object is no set member
            if isinstance(kind, str) and kind in text_types and isinstance(part.get("text"), str):
                out.append(Text(part["text"], raw=part, pristine=True))
            else:
                out.append(self.opaque(kind if isinstance(kind, str) else fallback, part))
        return tuple(out)

    # ---------------------------------------------------------------- render

    def render(
        self,
        conv: Conversation,
        memo: Memo | None = None,
        prefix: PrefixCache[Rendered] | None = None,
    ) -> object:
        """The wire body of ``conv``: same shape as its source, pristine parts untouched."""
        messages = conv.messages
        default = self.default_marker(conv)
        # what a jump left unchanged renders as before (with the same default marker)
        done = resumed(prefix, messages, default)
        given = self._given(conv) if len(done.out) < len(messages) else ()
        for i in range(len(done.out), len(messages)):
            msg = messages[i]
            k = msg.index  # the caller's own item, or ctxwin's reading of SDK objects in it
            theirs = k is not None and k < len(given) and given[k] is msg.raw
            if msg.pristine:  # the caller's: parsing sees its changes; else a copy, watched
                done.add(*((msg.raw, None) if theirs else read_again(memo, msg, done.unchanged)))
                continue
            salt = int(msg.cache and default is not None)  # rendered with another marker
            hit = remembered(memo, msg, done.unchanged, salt)  # (formats/_rendered.py)
            if hit is not None:
                done.add(*hit)
                continue
            rendered = self.render_message(msg, conv)
            if isinstance(rendered, Mapping) and self.marker_of(rendered) != msg.cache:
                # the message's own marker where it had one (its ``ttl`` kept), else the default
                on = (self.marker_value(msg.raw) or default or True) if msg.cache else False
                rendered = self.set_marker(dict(rendered), on)
            if not theirs:  # its parts are the parse's reading: never handed out
                rendered = copy.deepcopy(rendered)
            done.add(rendered, kept(memo, msg, rendered, salt))
        if prefix is None:
            return self.wrap(conv, done.out)
        done.seal()
        prefix.put(messages, done)
        return self.wrap(conv, list(done.out))  # the cached list is never handed out

    def _given(self, conv: Conversation) -> Sequence[object]:
        """The caller's own items, as the request listed them (none when it did not)."""
        try:
            return self.items_of(self.listed(conv.source))
        except FormatError:
            return ()

    def wrap(self, conv: Conversation, items: list[object]) -> object:
        source = conv.source
        if isinstance(source, Mapping):
            body = dict(source)
            body[self.container] = items
            return body
        return items

    @abstractmethod
    def render_message(self, msg: Message, conv: Conversation) -> object:
        """A non-pristine message as wire data (from ``msg.raw`` when it has one)."""

    # ---------------------------------------------------------------- cache markers

    def marker_of(self, item: Mapping[str, Any]) -> bool:
        """Whether a wire message carries a prompt-cache breakpoint (formats without explicit
        breakpoints: never)."""
        return False

    def set_marker(self, item: dict[str, Any], on: bool | Mapping[str, Any]) -> dict[str, Any]:
        """A rendered wire message with its breakpoint at its end (``on``: the marker, or
        True for the default one) or none."""
        return item

    def marker_value(self, item: object) -> Mapping[str, Any] | None:
        """The last breakpoint a wire message carries (None: none, or no such format)."""
        return None

    def default_marker(self, conv: Conversation) -> Mapping[str, Any] | None:
        """The breakpoint written on a message that had none of its own, where the request
        wants another than the format's default (None: the default): Anthropic's with
        ``ttl: "1h"`` under automatic caching for an hour
        (:func:`~ctxwin.formats._markers.automatic_hour`)."""
        return None

    def unmarked(self, item: object, marked: bool | None = None) -> object:
        """A wire message without its cache breakpoint, for comparing prefixes: a marker
        moved away from a message does not change what the provider cached (nor does a
        string content written as one text part to carry a marker). ``item`` itself where
        there is nothing to take off (not copied: compared by identity first); ``marked``:
        whether it carries a marker, where the caller knows (a parsed message's ``cache``)."""
        if type(item) is not dict and not isinstance(item, Mapping):
            return item
        if marked is None:
            marked = self.marker_of(item)
        out = self.set_marker(dict(item), False) if marked else None
        for key in ("content", "output"):
            value = (item if out is None else out).get(key)
            if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping):
                part = value[0]
                if len(part) == 2 and part.get("type") in ("text", "input_text") and "text" in part:
                    out = dict(item) if out is None else out
                    out[key] = part["text"]
        return item if out is None else out

    # ---------------------------------------------------------------- describing

    @abstractmethod
    def block_path(self, msg: Message, block: int) -> str:
        """JSON path of a block in the request (``messages[3].tool_calls[1]``)."""

    @abstractmethod
    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        """What the provider answers for this problem (or a plain statement of it)."""

    def __repr__(self) -> str:
        return f"<ctxwin adapter {self.name}>"


# ------------------------------------------------------------------------------ shared parts


def require(cond: bool, message: str, *, path: str, format: FormatName) -> None:
    if not cond:
        raise FormatError(message, path=path, format=format)


def json_type(value: object) -> str:
    """A value's JSON type name (``null``, ``boolean``, ``number``, ``string``, ``array``,
    ``object``; Python's for anything else), for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, list) else type(value).__name__


def role_of(
    raw: Mapping[str, Any],
    roles: Mapping[str, Role],
    *,
    path: str,
    format: FormatName,
    default: str | None = None,
) -> Role:
    """The neutral role of a wire message (``default`` when it has none, or null)."""
    name = raw.get("role")
    if name is None:
        name = default
    role = roles.get(name) if isinstance(name, str) else None
    if role is None:
        what = "a message needs a 'role'" if name is None else f"unknown role {name!r}"
        raise FormatError(
            f"{what} (expected one of {', '.join(roles)})",
            path=f"{path}.role",
            format=format,
        )
    return role
