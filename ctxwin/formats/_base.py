"""What every wire-format adapter provides, and the parts they share.

An adapter turns a request body into a neutral :class:`Conversation` and back. It keeps the
original dicts: a pristine message renders as the very object it came from, and an edited
one is rebuilt from its original with only the edited fields replaced.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ctxwin._exceptions import FormatError
from ctxwin._memo import Memo, PrefixCache
from ctxwin._model import Conversation, FormatName, Loc, Message, Opaque, Part, Text, ToolCall

if TYPE_CHECKING:
    from ctxwin._pairing import PairingRules, ProblemCode


def compact_json(value: object) -> str:
    """JSON as ctxwin writes it: compact, non-ASCII kept as is, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Adapter(ABC):
    """One wire format."""

    name: ClassVar[FormatName]
    rules: ClassVar[PairingRules]
    container: ClassVar[str]
    """The body key that holds the message list (``messages``, ``input``, ``contents``)."""
    message_overhead: ClassVar[int] = 3
    """Tokens each message costs beyond its content (role, separators), as documented."""
    request_overhead: ClassVar[int] = 3
    """Tokens a request costs beyond its messages (reply priming)."""

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
        prefix: PrefixCache[list[Message]] | None = None,
    ) -> Conversation:
        """``body`` as a conversation. ``memo`` and ``prefix`` (kept by a policy across
        requests) let a history that grew by a few messages be parsed for those only."""
        items = self.items_of(body)
        messages: list[Message] = []
        start = 0
        if prefix is not None:
            found = prefix.take(items)
            if found is not None:
                start, old = found
                messages = old[:start]
        append = messages.append
        for i in range(start, len(items)):
            raw = items[i]
            if memo is not None:
                hit = memo.get(raw, i)
                if hit is not None:
                    append(hit)  # type: ignore[arg-type]
                    continue
            if not isinstance(raw, Mapping):
                raise FormatError(
                    f"each element must be a JSON object, not {type(raw).__name__}",
                    path=self.path(i),
                    format=self.name,
                )
            msg = self.parse_message(raw, i)
            if memo is not None:
                memo.put(raw, msg, i)
            append(msg)
        if prefix is not None:
            prefix.put(items, messages)
        return Conversation(
            format=self.name,
            messages=tuple(messages),
            source=body,
            server_state=self.server_state(body),
            dialect=self.dialect(body),
        )

    def ties_reasoning(self, call: ToolCall) -> bool:
        """Whether the provider requires this call to come with its reasoning item (then the
        window's ``clear_reasoning`` leaves that round's reasoning alone)."""
        return False

    def listed(self, body: object) -> object:
        """``body`` with its messages as a list (a Responses ``input`` string becomes one
        user message), for code that slices histories, such as the replay."""
        return body

    def server_state(self, body: object) -> bool:
        """Whether earlier turns live on the provider's side (calls may be absent)."""
        return False

    def dialect(self, body: object) -> str:
        """A style hint kept on the conversation for writing new parts (see Conversation)."""
        return ""

    @abstractmethod
    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        """One wire message as a neutral message (raise FormatError with the path if bad)."""

    # ---------------------------------------------------------------- render

    def render(
        self,
        conv: Conversation,
        memo: Memo | None = None,
        prefix: PrefixCache[list[object]] | None = None,
    ) -> object:
        """The wire body of ``conv``: same shape as its source, pristine parts untouched."""
        out: list[object] = []
        messages = conv.messages
        start = 0
        if prefix is not None:
            found = prefix.take(messages)
            if found is not None:
                start, old = found
                out = old[:start]
        for i in range(start, len(messages)):
            msg = messages[i]
            if msg.pristine:
                out.append(msg.raw)
                continue
            if memo is not None:
                hit = memo.get(msg)
                if hit is not None:
                    out.append(hit)
                    continue
            rendered = self.render_message(msg, conv)
            if memo is not None:
                memo.put(msg, rendered)
            out.append(rendered)
        if prefix is not None:
            prefix.put(messages, out)
            out = list(out)  # the cached list is never handed out
        return self.wrap(conv, out)

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

    # ---------------------------------------------------------------- reporting

    @abstractmethod
    def block_path(self, msg: Message, block: int) -> str:
        """JSON path of a block in the request (``messages[3].tool_calls[1]``)."""

    @abstractmethod
    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        """What the provider answers for this problem (or a plain statement of it)."""

    envelope_keys: ClassVar[tuple[str, ...]] = ("tools",)
    """Body keys outside the message list that the request pays for (system, tools)."""


def parse_parts(
    parts: list[Any],
    path: str,
    format: FormatName,
    *,
    text_types: Collection[str] = ("text",),
    what: str = "a content part",
    fallback: str = "unknown",
) -> tuple[Part, ...]:
    """A list of content parts: text parts as :class:`Text`, anything else :class:`Opaque`
    (kept as it is). ``path`` is the list's JSON path, for errors."""
    out: list[Part] = []
    for k, part in enumerate(parts):
        require(
            isinstance(part, Mapping),
            f"{what} must be an object",
            path=f"{path}[{k}]",
            format=format,
        )
        kind = part.get("type")
        if kind in text_types and isinstance(part.get("text"), str):
            out.append(Text(part["text"], raw=part, pristine=True))
        else:
            out.append(Opaque(kind if isinstance(kind, str) else fallback, raw=part))
    return tuple(out)


def require(cond: bool, message: str, *, path: str, format: FormatName) -> None:
    if not cond:
        raise FormatError(message, path=path, format=format)
