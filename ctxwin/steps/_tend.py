"""Keeping the originals a conversation still quotes in the store.

A result's edit is memoized and the window resumes where it stopped, so the
:class:`~ctxwin.steps._shelf.Shelf` is asked to keep an original once, when the result is
first shortened or cleared. The store may lose it after that: its TTL runs out, a Redis
restarts without persistence or is flushed, an eviction, a SQLite file deleted. Each
conversation therefore has its quoted originals looked at again once :meth:`Shelf.life`
has passed since it last did (half the TTL, at most 10 minutes), or as soon as a recall
found the store had lost one (:attr:`Shelf.lost_at`): every handle the request quotes
that the shelf put before then (or never) is put again, from the shelf's memory of the
original or from the request's own history. Between two looks a request costs a lookup
of its conversation (by the identity of its messages) and a comparison of two times: no
store round trip.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import PrefixCache
from ctxwin._core.model import Message, ToolResult
from ctxwin.steps._handles import HANDLE_RE, is_handle_of

if TYPE_CHECKING:
    from ctxwin.steps._shelf import Shelf

__all__ = ["Tending"]

CONVERSATIONS = 8
"""Conversations whose last look a shelf remembers (one more is looked at at once), as
many as the engine's other memos of a history's prefix keep."""


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
        came, holding the originals)."""
        messages = before.messages
        with self._lock:
            found = self._looked.take(messages)
        now = shelf.clock()
        if found is not None:
            looked = found[1]
            due = now - looked.at >= shelf.life() or looked.at <= shelf.lost_at
        else:
            looked, due = _Looked(float("-inf")), True
        if due and not shelf.cooling and _put_again(shelf, before, after):
            looked.at = now
        with self._lock:
            self._looked.put(messages, looked)


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
