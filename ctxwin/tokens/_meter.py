"""Counting a request's tokens, each piece once.

A :class:`TokenMeter` counts blocks and messages through identity memos (a block or message
already counted is looked up, not recounted) and texts through the counter's content memo.
What a format adds per message and per request comes in as :class:`Overheads` (each
adapter states its own), and so do the fields of a message it does not parse into blocks but
the provider reads (:class:`Unparsed`: DeepSeek's ``reasoning_content``, OpenAI's ``name``),
counted with the message. Content ctxwin does not read is estimated: a media part (the
adapter marks images, documents and files so) as :data:`IMAGE_TOKENS`, or, where the
adapter states how its provider bills images (:attr:`Overheads.images`), an inline image by
its size, read from its header (:mod:`ctxwin.tokens._images`) or at its provider's fixed
cost (Gemini's), an inline PDF by its pages (:mod:`ctxwin.tokens._documents`); other
opaque parts as their
JSON text, with long opaque strings (base64 data, encrypted reasoning: ASCII without
spaces) at one token per four characters; an adapter may say what an encrypted reasoning
item costs instead (:attr:`Overheads.encrypted_reasoning`). A result whose wire output is
an image and nothing else (:class:`ImageOnly`: a Responses ``computer_call_output``)
counts as that image, or as the blank one its adapter writes in place of its text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, get_origin

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import MAX_DEPTH, compact_json, depth_over, long_int, long_int_words
from ctxwin._core.memo import BLOCK_ENTRIES, Memo
from ctxwin._core.model import (
    Block,
    Message,
    Opaque,
    Part,
    Text,
    ToolCall,
    ToolResult,
    earlier_reasoning,
)
from ctxwin._core.snapshot import same, snapshot
from ctxwin._exceptions import InputError
from ctxwin.tokens.counters import TokenCounter

__all__ = [
    "CALL_OVERHEAD",
    "IMAGE_TOKENS",
    "ImageOnly",
    "Overheads",
    "Sealed",
    "TokenMeter",
    "Unparsed",
]

IMAGE_TOKENS = 1000
"""Estimate for one image or document part (providers bill these by size, not by text)."""
CALL_OVERHEAD = 3
"""Tokens a tool call costs beyond its name and arguments (an estimate)."""
_BLOB = 256
_ENVELOPES = 64
"""Envelope values (system prompts, tool lists, output schemas) a meter remembers."""
_Envelope = tuple[object, int, list[object]]
"""A counted system prompt, tool list or output schema: the value, its tokens, its snapshot."""
_WHAT = "system prompt, tools or output schema"
"""What the envelope holds, as an error names it."""


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a reasoning item's sealed (encrypted) reasoning costs: one token for every
    ``per`` characters of its ``key`` string past the first ``fixed``. The adapter that
    states it names the key; the rest of the item (a summary) costs nothing."""

    key: str
    fixed: int
    per: int

    def tokens(self, raw: object) -> int | None:
        """The item's tokens, or None when it carries no sealed reasoning."""
        sealed = raw.get(self.key) if isinstance(raw, Mapping) else None
        if not isinstance(sealed, str) or not sealed:
            return None
        return max(len(sealed) - self.fixed, 0) // self.per


@dataclass(frozen=True, slots=True)
class Unparsed:
    """Message-level fields the adapter does not parse into blocks and the provider reads
    (and bills), counted with their message. A string counts as its text, any other value
    as its JSON text (with long opaque strings as :meth:`TokenMeter.json_tokens` counts
    them); absent, null or empty (``""``, ``[]``, ``{}``) counts nothing. ``keys`` are the
    names one value goes by for different servers (LiteLLM's message holds its reasoning
    as both ``reasoning_content`` and ``thinking_blocks``): a message holding several
    counts the largest, not their sum. ``extra``: tokens the field costs beyond its value
    (OpenAI's ``name``: one)."""

    keys: tuple[str, ...]
    extra: int = 0


@dataclass(frozen=True, slots=True)
class ImageOnly:
    """Results whose wire output is one image and nothing else (a Responses
    ``computer_call_output`` holds a screenshot, no text): the adapter writes the first
    opaque part of such a result, or, when it has none (its screenshot cleared into a
    placeholder, or an interrupted call answered), ``blank``, an image part of its own. The
    text of such a result never reaches the provider: the result counts as the image it
    sends. A result as it came (pristine) goes as it came, and counts so (a text there,
    which the API refuses, as its text)."""

    kinds: frozenset[str]
    blank: Mapping[str, object]
    blank_kind: str


@dataclass(frozen=True, slots=True)
class Overheads:
    """Tokens a format adds beyond the content: per message (role, separators) and per
    request (reply priming)."""

    message: int = 3
    request: int = 3
    encrypted_reasoning: Sealed | None = None
    """What a reasoning item carrying sealed reasoning costs (the provider reads that only).
    None, or an item without it: the item as any other opaque part."""
    drops_earlier_reasoning: bool = False
    """Whether the provider drops the reasoning items of earlier turns (those before the
    latest message of the user's own) before it reads the request, as OpenAI does: they
    count nothing, and the request it caches is the one without them (so a new message of
    the user's own breaks the cache at the first reasoning item of the turn before)."""
    unparsed: tuple[Unparsed, ...] = ()
    """The fields of a wire message the adapter does not read into blocks but the provider
    reads: each counts with its message (see :class:`Unparsed`)."""
    images: Callable[[object], int | None] | None = None
    """What a media part (its raw value) costs where the adapter can tell, as its provider
    bills it: an inline image by its size, an inline PDF by its pages (None, or a part it
    cannot tell: :data:`IMAGE_TOKENS`)."""
    image_only: ImageOnly | None = None
    """The results that go as one image and nothing else (see :class:`ImageOnly`)."""
    nulls_unset: bool = False
    """Whether a field set to null is unset, as the provider reads it (proto3 JSON: Gemini,
    where a ``model_dump()`` sets every field it was not given to null): an opaque part
    counts without its null fields, at any depth. It still goes out as it came."""


def _envelope_json(value: object, key: str | None = None) -> str:
    """The JSON text of a system prompt, a tool list or an output schema, as counted: an SDK
    object in it (a pydantic model: ``google.genai.types.Tool``...) as its ``model_dump``, a
    class (a ``response_format`` LiteLLM and the SDKs take: a pydantic model, a dataclass) as
    its JSON schema (:func:`_class_schema`); anything else that is not JSON data is an
    :class:`~ctxwin.InputError` naming it, at its path under ``key`` (where the body holds
    ``value``: ``tools``, ``generationConfig.responseSchema``; the path then reads
    ``tools[0].function.x``) where it is known."""
    if depth_over(value):
        raise InputError(
            f"the request's {_WHAT} nest more than {MAX_DEPTH} levels deep: "
            "not a request ctxwin can read",
            path=key,
        )

    def dump(obj: object) -> object:
        if isinstance(obj, type) or get_origin(obj) is not None:  # a response_format's class
            # (or list[Recipe], a union: Gemini's response_schema): the SDK sends its schema
            schema = _class_schema(obj)
            if schema is not None:
                return schema
            named = f"{obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else repr(obj)
            name = f"type ({named}: pydantic makes no schema of it)"
            raise _NotJson(name, obj)
        model_dump = getattr(obj, "model_dump", None)
        if callable(model_dump):
            try:
                return model_dump(mode="json", exclude_none=True, by_alias=True)
            except TypeError:  # a model_dump of another shape
                return model_dump()
        t = type(obj)
        name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        raise _NotJson(name, obj)

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=dump)
    except _NotJson as e:
        at = _path_to(value, e.args[1])
        what = f"a value of type {e.args[0]}" + (f" at {at}" if at and key is None else "")
    except (TypeError, ValueError, RecursionError) as e:  # a key that is not a string...
        at = _path_to(value, None, long_int)
        what = long_int_words() if at else f"data JSON cannot hold ({e})"
        what += f" at {at}" if at and key is None else ""
    raise InputError(
        f"the request's {_WHAT} hold {what}: ctxwin counts them as the JSON "
        "the provider receives; pass JSON data (dicts, lists, strings, numbers)",
        path=None if key is None else key + ("" if at[:1] in ("", "[") else ".") + at,
    )


@lru_cache(maxsize=256)
def _class_schema(cls: Any) -> dict[str, object] | None:
    """The JSON schema of a class an SDK takes as an output type (``response_format``,
    ``text_format``): a pydantic model's ``model_json_schema()``, any other class pydantic can
    make a schema of (a pydantic or standard dataclass, a TypedDict: what the openai SDK
    takes through ``pydantic.TypeAdapter``) its adapter's; None where pydantic cannot.
    Memoized per class (a schema is built once, not on every request)."""
    model_schema = getattr(cls, "model_json_schema", None)
    try:
        if callable(model_schema):
            return model_schema()  # type: ignore[no-any-return]
        from pydantic import TypeAdapter

        return TypeAdapter(cls).json_schema()
    except Exception:  # not a class pydantic can describe: named in the caller's error
        return None


def _path_to(value: object, bad: object, test: Callable[[int], bool] | None = None) -> str:
    """Where ``bad`` is inside ``value`` (``[0].function.x``; "" when it is ``value``), or
    with ``test``, the first integer it is true of, to name it in an error (iterative: the
    error path only)."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        node, at = stack.pop()
        if node is bad if test is None else type(node) is int and test(node):
            return at
        if isinstance(node, Mapping):
            stack.extend((v, f"{at}.{k}" if at else str(k)) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(node))
    return ""


def _newest_half(memo: dict[int, _Envelope]) -> dict[int, _Envelope]:
    """The newer half of a full envelope memo, copied in one C call: no key another thread
    may have evicted first (``Result.report`` and ``Result.tokens`` count outside the
    policy's lock), no iterator its insert could break (if one does, the memo starts
    afresh: it only saves counting)."""
    try:
        return dict(list(memo.items())[-(_ENVELOPES // 2) :])
    except RuntimeError:  # changed size while copied
        return {}


class _NotJson(Exception):
    """A value :func:`_envelope_json` cannot write (its type's name)."""


class TokenMeter:
    """Counts blocks, messages and whole requests of one format."""

    def __init__(
        self,
        counter: TokenCounter,
        overheads: Overheads,
        blocks: Memo | None = None,
        messages: Memo | None = None,
    ) -> None:
        self.counter = counter
        self.overheads = overheads
        self.blocks = blocks if blocks is not None else Memo(BLOCK_ENTRIES)
        self.messages = messages if messages is not None else Memo()
        self._envelope: dict[int, _Envelope] = {}
        self._totals: list[tuple[Conversation, int]] = []
        self._fields = frozenset(k for f in overheads.unparsed for k in f.keys)
        """Every key of :attr:`Overheads.unparsed`: a message holding none (most) is not
        looked into."""
        self._image_only = overheads.image_only
        self._blank: int | None = None

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def block(self, block: Block) -> int:
        memo = self.blocks
        hit = memo.get(block)
        if hit is not None:
            return hit  # type: ignore[return-value]
        count = self.counter.count
        if isinstance(block, Text):
            n = count(block.text)
        elif isinstance(block, ToolCall):
            n = count(block.name) + count(block.arguments) + CALL_OVERHEAD
        elif isinstance(block, ToolResult):
            only = self._image_only
            if only is not None and block.kind in only.kinds and not block.pristine:
                n = self.image_only(block.content)  # written anew: as its image alone
            else:
                n = sum(
                    count(p.text) if isinstance(p, Text) else self.opaque(p) for p in block.content
                )
        else:
            n = self.opaque(block)
        memo.put(block, n)
        return n

    def image_only(self, content: Sequence[Part]) -> int:
        """The tokens of a result that goes as one image (:class:`ImageOnly`): its first
        opaque part, as the adapter writes it, or the blank image it writes without one."""
        for part in content:
            if isinstance(part, Opaque):
                return self.opaque(part)
        blank = self._blank
        if blank is None:
            only = self._image_only
            assert only is not None
            blank = self._blank = self.opaque(Opaque(only.blank_kind, only.blank, category="media"))
        return blank

    def replaced(self, result: ToolResult, text: str) -> int:
        """The tokens of ``result`` with its content replaced by ``text`` alone (as the
        window clears it into its placeholder): the text's, or for a result that goes as one
        image (:class:`ImageOnly`), the blank image its adapter writes instead."""
        only = self._image_only
        if only is not None and result.kind in only.kinds:
            return self.image_only(())
        return self.counter.count(text)

    def opaque(self, part: Opaque) -> int:
        """An estimate for content ctxwin does not read."""
        if part.category == "media":
            rule = self.overheads.images
            n = rule(part.raw) if rule is not None else None
            return IMAGE_TOKENS if n is None else n
        sealed = self.overheads.encrypted_reasoning
        if sealed is not None and part.category == "reasoning":
            n = sealed.tokens(part.raw)
            if n is not None:
                return n
        return self.json_tokens(part.raw)

    def json_tokens(self, value: object) -> int:
        """The tokens of ``value``'s JSON text, its long opaque strings (base64 data,
        signatures, encrypted reasoning: ASCII without a space) at one token per four
        characters. Prose in a script written without spaces (Chinese, Japanese) is counted
        as text. Where the format says a null field is unset (:attr:`Overheads.nulls_unset`),
        the null fields of its objects are left out."""
        blobs = 0
        nulls = self.overheads.nulls_unset

        def strip(value: object) -> object:
            nonlocal blobs
            if isinstance(value, str):
                if len(value) > _BLOB and " " not in value and value.isascii():
                    blobs += len(value) // 4
                    return ""
                return value
            if isinstance(value, Mapping):
                return {k: strip(v) for k, v in value.items() if v is not None or not nulls}
            if isinstance(value, list):
                return [strip(v) for v in value]
            return value

        return self.counter.count(compact_json(strip(value))) + blobs

    def message(self, msg: Message) -> int:
        memo = self.messages
        hit = memo.get(msg)
        if hit is not None:
            return hit  # type: ignore[return-value]
        n = self.overheads.message + sum(self.block(b) for b in msg.blocks)
        raw = msg.raw
        if self._fields and isinstance(raw, Mapping) and not self._fields.isdisjoint(raw):
            n += self.fields(raw)
        memo.put(msg, n)
        return n

    def fields(self, raw: Mapping[str, object]) -> int:
        """The tokens of the fields of wire message ``raw`` that its adapter does not parse
        into blocks (:attr:`Overheads.unparsed`)."""
        total = 0
        for field in self.overheads.unparsed:
            best = -1
            for key in field.keys:
                value = raw.get(key)
                if value is None or (not value and isinstance(value, (str, list, dict))):
                    continue  # null, "", [] or {}: nothing the model reads
                n = self.counter.count(value) if isinstance(value, str) else self.json_tokens(value)
                best = max(best, n)
            if best >= 0:
                total += best + field.extra
        return total

    def envelope(self, conv: Conversation) -> int:
        """Tokens of what the request carries besides its messages (system, tools, the
        output schema: the adapter's ``envelope_keys``); a value changed in place since it
        was counted is counted again."""
        total = self.overheads.request + conv.provider_prompt
        for i, value in enumerate(conv.envelope):
            hit = self._envelope.get(id(value))
            snap = None if isinstance(value, str) else snapshot([value])
            if hit is None or hit[0] is not value or (snap is not None and not same(snap, hit[2])):
                try:
                    text = value if isinstance(value, str) else _envelope_json(value)
                except InputError:  # again, to name where (the error path only)
                    paths = conv.envelope_paths  # empty in a conversation built by hand
                    _envelope_json(value, paths[i] if i < len(paths) else None)
                    raise
                hit = (value, self.counter.count(text), snap or [])
                memo = self._envelope
                memo[id(value)] = hit
                if len(memo) > _ENVELOPES:
                    self._envelope = _newest_half(memo)
            total += hit[1]
        return total

    def conversation(self, conv: Conversation, envelope: int | None = None) -> int:
        """Tokens of the whole request ``conv`` renders to, as the provider reads it (without
        what it drops: :meth:`unread`); ``envelope``: its envelope's, as counted before."""
        for known, total in self._totals:
            if known is conv:
                return total
        if envelope is None:
            envelope = self.envelope(conv)
        return envelope + sum(self.read(conv.messages))

    def read(self, messages: Sequence[Message]) -> list[int]:
        """The tokens of each message as the provider reads it: 0 for what it drops
        (:meth:`unread`)."""
        out = [self.message(m) for m in messages]
        for k in self.unread(messages):
            out[k] = 0
        return out

    def kept(self, messages: Sequence[Message]) -> list[int]:
        """The positions of the messages the provider reads (all but :meth:`unread`): what
        its cache compares between requests."""
        unread = set(self.unread(messages))
        return [k for k in range(len(messages)) if k not in unread]

    def unread(self, messages: Sequence[Message]) -> list[int]:
        """The messages the provider drops before reading the request: the reasoning items
        of earlier turns where the format says so (:attr:`Overheads.drops_earlier_reasoning`),
        none otherwise."""
        return earlier_reasoning(messages) if self.overheads.drops_earlier_reasoning else []

    def remember(self, conv: Conversation, total: int) -> None:
        """Note the total of ``conv``, computed by whoever built it (the window keeps a
        running total), so that asking again costs no recount."""
        self._totals.insert(0, (conv, total))
        del self._totals[4:]
