"""Keeping the originals a conversation still quotes in the store.

A result's edit is memoized and the window resumes where it stopped, so the
:class:`~ctxwin.steps._shelf.Shelf` is asked to keep an original once: when a result step
shortens the result (the request that first quotes its handle), or when the window plans to
clear it (the result leaves the kept rounds), which may be long before the jump that first
sends its placeholder. The store may lose it after that: its TTL runs out, a Redis
restarts without persistence or is flushed, an eviction, a SQLite file deleted. Each
conversation therefore has its quoted originals looked at again once :meth:`Shelf.life`
has passed since it last did (half the TTL, at most 10 minutes), as soon as a recall
found the store had lost one (:attr:`Shelf.lost_at`), and as soon as a request first sends
a placeholder quoting a handle put that long ago (:func:`first_sent`): every handle the
request quotes that the shelf put before then (or never) is put again, from the shelf's
memory of the original or from the request's own history. Between two looks a request
costs a lookup of its conversation (by the identity of its messages) and a comparison of
two times: no store round trip.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import PrefixCache
from ctxwin._core.model import Message, ToolResult
from ctxwin.steps._handles import HANDLE_RE, is_handle_of

if TYPE_CHECKING:
    from ctxwin.steps._shelf import Shelf

__all__ = ["Tending", "first_sent", "sending"]

CONVERSATIONS = 8
"""Conversations whose last look a shelf remembers (one more is looked at at once), as
many as the engine's other memos of a history's prefix keep."""


_SENT: ContextVar[list[str] | None] = ContextVar("ctxwin_first_sent", default=None)
"""The handles the placeholders of the request being applied in this context quote for the
first time (:func:`first_sent`); None outside a request (:func:`sending`)."""


@contextmanager
def sending() -> Iterator[None]:
    """The span of one request (:meth:`Shelf.request`): what it first sends is its own."""
    token = _SENT.set([])
    try:
        yield
    finally:
        _SENT.reset(token)


def first_sent(placeholder: str) -> None:
    """Note the handles ``placeholder`` quotes, sent for the first time by this request:
    the window clears a result now that it planned to clear (and kept the original of)
    maybe longer ago than the store's TTL. The look at the end of the request
    (:class:`Tending`) puts such an original again when it was put :meth:`Shelf.life` ago
    or more; nothing is asked of the store here."""
    sent = _SENT.get()
    if sent is not None and "r-" in placeholder:
        sent.extend(HANDLE_RE.findall(placeholder))


@dataclass
class _Looked:
    """When a conversation's quoted originals were last looked at (the shelf's clock)."""

    at: float


class Tending:
    """The looks of the conversations of one shelf's policies (:meth:`Shelf.tend`)."""

    def __init__(self) -> None:
        self._looked: PrefixCache[_Looked] = PrefixCache(CONVERSATIONS)
        self._lock = threading.Lock()

    def __call__(self, shelf: Shelf, before: Conversation, after: Conversation) -> None:
        """Put again the originals ``after`` (the request as sent) quotes that the store
        may have lost, when this conversation is due a look (``before``: the request as it
        came, holding the originals). When the store fails, it stays due."""
        messages = before.messages
        with self._lock:
            found = self._looked.take(messages)
        now = shelf.clock()
        looked = found[1] if found is not None else _Looked(-math.inf)
        due = now - looked.at >= shelf.life() or looked.at <= shelf.lost_at or _sent_stale(shelf)
        if due:
            ok = not shelf.cooling and _put_again(shelf, before, after)
            looked.at = now if ok else -math.inf
        with self._lock:
            self._looked.put(messages, looked)


def _sent_stale(shelf: Shelf) -> bool:
    """Whether this request first sends a handle whose original was put :meth:`Shelf.life`
    ago or more (:func:`first_sent`): one call of the shelf's, only after a jump."""
    sent = _SENT.get()
    return sent is not None and bool(sent) and bool(shelf.stale(sent))


def _put_again(shelf: Shelf, before: Conversation, after: Conversation) -> bool:
    """Put again each original ``after`` quotes that :meth:`Shelf.stale` says to; False
    when the store failed (the conversation stays due a look)."""
    quoted = _quoted(after)
    sources: dict[int, Message] | None = None
    for handle in shelf.stale(quoted):
        text = shelf.text_of(handle)
        if text is None:
            if sources is None:
                sources = {m.index: m for m in before.messages if m.index is not None}
            text = _original(sources, *quoted[handle], handle)
        if text is not None and not shelf.put_again(handle, text) and shelf.cooling:
            return False
    return True


def _quoted(conv: Conversation) -> dict[str, tuple[Message, ToolResult]]:
    """The handles the results of ``conv`` quote, each with the (first) message and result
    quoting it: a result step's (its ``origin``) and a placeholder's. Messages as they came
    (pristine) hold no edit of ctxwin's: passed over."""
    found: dict[str, tuple[Message, ToolResult]] = {}
    for msg in conv.messages:
        if msg.pristine:
            continue
        for block in msg.blocks:
            if not isinstance(block, ToolResult) or block.origin == "":
                continue
            if block.origin:
                found.setdefault(block.origin, (msg, block))
                continue
            text = block.text
            if "r-" in text:
                for handle in HANDLE_RE.findall(text):
                    found.setdefault(handle, (msg, block))
    return found


def _original(
    sources: dict[int, Message], msg: Message, block: ToolResult, handle: str
) -> str | None:
    """The original of ``handle`` in the request as it came: the result answering the same
    call in the same message, if its text is the one ``handle`` names."""
    source = sources.get(msg.index) if msg.index is not None else None
    if source is None:
        return None
    for candidate in source.blocks:
        if isinstance(candidate, ToolResult) and candidate.call_id == block.call_id:
            text = candidate.text
            if is_handle_of(handle, text):
                return text
    return None
