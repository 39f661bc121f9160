"""Keeping the originals a conversation still quotes in the store.

A result's edit is memoized and the window resumes where it stopped, so the
:class:`~ctxwin.steps._shelf.Shelf` is asked to keep an original once, by the request that
first quotes its handle: the one in which a result step shortens the result, or whose jump
first sends the window's placeholder for it (:func:`~ctxwin.steps._clearing.jump`). The
store may lose it after that: its TTL runs out, a Redis restarts without persistence or is
flushed, an eviction, a SQLite file deleted. Each conversation therefore has its quoted
originals looked at again once :meth:`Shelf.life` has passed since it last did (half the
TTL, at most 10 minutes), and as soon as a recall found the store had lost one
(:attr:`Shelf.lost_at`): every handle the request quotes that the shelf put before then
(or never) is put again, from the shelf's memory of the original or from the request's own
history.

A client may keep ctxwin's output as its history: its next requests hold the placeholders
as they came (pristine messages, edited by no step). Their handles count as quoted too,
and a new message quoting a handle put that long ago (or never by this shelf) makes its
conversation due at once. What a message quotes is read once per message object (the
last :data:`HELD` remembered), so a request reads only the messages it adds. An original
neither in the shelf's memory nor in the request (another worker's, or this process
restarted) is put again from the store while it holds it; when it does not, a note of the
report says so (:meth:`Shelf.keep_from_store`).

Between two looks a request costs a lookup of its conversation (by the identity of its
messages), a look at the messages it adds, and a comparison of two times: no store round
trip.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import PREFIX_ENTRIES, Memo, PrefixCache
from ctxwin._core.model import Message, ToolResult
from ctxwin.steps._handles import HANDLE_RE, is_handle_of

if TYPE_CHECKING:
    from ctxwin.steps._shelf import Shelf

__all__ = ["Tending"]

CONVERSATIONS = PREFIX_ENTRIES
"""Conversations whose last look a shelf remembers (one more is looked at at once), as
many as the engine's other memos of a history's prefix keep (it was 8 when they kept 64:
a policy serving 9 conversations in turn looked at each whole history at every request)."""


RESENT = 16
"""The most messages at the end of the last request a request may differ in and still be
its conversation's (a client keeping ctxwin's output sends the newest results back capped);
two conversations that only start alike (one system prompt dict) are not taken for one."""

HELD = 65_536
"""Messages whose quoted handles a shelf remembers (by identity, as the engine's memos do):
a request reads the text of the messages it adds only."""
_NONE: tuple[str, ...] = ()


@dataclass
class _Looked:
    """When a conversation's quoted originals were last looked at (the shelf's clock)."""

    at: float


class Tending:
    """The looks of the conversations of one shelf's policies (:meth:`Shelf.tend`)."""

    def __init__(self) -> None:
        self._looked: PrefixCache[_Looked] = PrefixCache(CONVERSATIONS)
        self._lock = threading.Lock()
        self._held = _Held()

    def __call__(self, shelf: Shelf, before: Conversation, after: Conversation) -> None:
        """Put again the originals ``after`` (the request as sent) quotes that the store
        may have lost, when this conversation is due a look (``before``: the request as it
        came, holding the originals). When the store fails, it stays due."""
        messages = before.messages
        with self._lock:  # a client keeping ctxwin's output sends its newest results back
            found = self._looked.common(messages, RESENT)  # capped: the rest is read
        now = shelf.clock()
        seen, looked = found if found is not None else (0, _Looked(-math.inf))
        due = (
            now - looked.at >= shelf.life()
            or looked.at <= shelf.lost_at
            or _held_stale(self._held, shelf, messages[seen:])
        )
        if due:
            ok = not shelf.cooling and _put_again(shelf, before, after, self._held)
            looked.at = now if ok else -math.inf
        with self._lock:
            self._looked.put(messages, looked)


def _held_stale(held: _Held, shelf: Shelf, added: Sequence[Message]) -> bool:
    """Whether the messages a request adds to its conversation (``added``, all of them for
    a conversation not known) quote a handle :meth:`Shelf.stale` says to put again: the
    client keeps ctxwin's placeholders in its history. One call of the shelf's, only when
    they quote one."""
    new = [h for msg in added for h in held(msg)]
    return bool(new) and bool(shelf.stale(new))


class _Held:
    """The handles the results of each message quote in their text, read once per message
    (remembered by identity, as the engine's memos do: :data:`HELD` messages)."""

    def __init__(self) -> None:
        self._memo = Memo(HELD)
        self._lock = threading.Lock()

    def __call__(self, msg: Message) -> tuple[str, ...]:
        with self._lock:
            found = self._memo.get(msg)
        if isinstance(found, tuple):
            return found
        handles: list[str] = []
        for block in msg.blocks:
            if isinstance(block, ToolResult) and "r-" in (text := block.text):
                handles.extend(HANDLE_RE.findall(text))
        out = tuple(dict.fromkeys(handles)) if handles else _NONE
        with self._lock:
            self._memo.put(msg, out)
        return out


def _put_again(shelf: Shelf, before: Conversation, after: Conversation, held: _Held) -> bool:
    """Put again each original ``after`` quotes that :meth:`Shelf.stale` says to; False
    when the store failed (the conversation stays due a look). One neither in the shelf's
    memory nor in ``before`` is put again from the store (:meth:`Shelf.keep_from_store`)."""
    quoted = _quoted(after, held)
    sources: dict[int, Message] | None = None
    lost: list[str] = []
    for handle in shelf.stale(quoted):
        text = shelf.text_of(handle)
        where = quoted[handle]
        if text is None and where is not None:
            if sources is None:
                sources = {m.index: m for m in before.messages if m.index is not None}
            text = _original(sources, *where, handle)
        if text is None:
            lost.append(handle)
        elif not shelf.put_again(handle, text) and shelf.cooling:
            return False
    if lost:
        shelf.keep_from_store(lost)
    return True


def _quoted(conv: Conversation, held: _Held) -> dict[str, tuple[Message, ToolResult] | None]:
    """The handles the results of ``conv`` quote, each with the (first) message and result
    quoting it: a result step's (its ``origin``) and a placeholder's. Messages as they came
    (pristine: a client that keeps ctxwin's output) quote handles whose originals are not
    in the request: None."""
    found: dict[str, tuple[Message, ToolResult] | None] = {}
    for msg in conv.messages:
        if msg.pristine:
            for handle in held(msg):
                found.setdefault(handle, None)
            continue
        for block in msg.blocks:
            if not isinstance(block, ToolResult) or block.origin == "":
                continue
            if block.origin:
                quoting: Sequence[str] = (block.origin,)
            else:
                text = block.text
                quoting = HANDLE_RE.findall(text) if "r-" in text else ()
            for handle in quoting:
                if found.get(handle) is None:  # its original may be in the request
                    found[handle] = (msg, block)
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
