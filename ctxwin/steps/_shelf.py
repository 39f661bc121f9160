"""The policy's store as steps use it: recall originals and the shared summary memo.

Content is keyed by a hash of it, so a handle is the same on every machine and ``apply``
stays a pure function of (history, policy). The store is opened on first use. A store that
is down, slow or refusing never breaks a request: each failure is a note for the report,
and the caller falls back (a placeholder without a handle, a summary computed here).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxwin._core.model import NotKept
from ctxwin._exceptions import StoreError
from ctxwin._lazy import require as lazy_require
from ctxwin._policy.schema import StoreConfig
from ctxwin.steps._answer import GREP_NOT_TEXT, RecallAnswer, absent, part_of
from ctxwin.steps._base import logger
from ctxwin.steps._confirmed import Confirmed
from ctxwin.steps._fallbacks import (
    CLEARED_FULL,
    CLEARED_REFUSED,
    CLEARED_STORE_DOWN,
    KEPT_FULL,
    KEPT_REFUSED,
    KEPT_STORE_DOWN,
    fallback_of,
)
from ctxwin.steps._handles import (
    HANDLE_DIGITS,
    HANDLE_RE,
    OLD_HANDLE_DIGITS,
    handle_of,
    is_handle_of,
    stored_text,
    utf8,
)
from ctxwin.steps._tend import Tending
from ctxwin.stores import Store, open_store
from ctxwin.stores._base import REDIS_SCHEMES, check_value, mask_url, masking, over_limit
from ctxwin.stores.memory import MemoryStore

if TYPE_CHECKING:
    from ctxwin._core.conversation import Conversation

__all__ = [
    "CLEARED_FULL",
    "CLEARED_REFUSED",
    "CLEARED_STORE_DOWN",
    "HANDLE_DIGITS",
    "HANDLE_RE",
    "KEPT_FULL",
    "KEPT_REFUSED",
    "KEPT_STORE_DOWN",
    "OLD_HANDLE_DIGITS",
    "RecallAnswer",
    "Shelf",
    "handle_of",
    "is_handle_of",
    "shelf_for",
]

_RECALL = "recall:"
_KEEPING = "keeping an original"
_SUMMARY = "summary:"
_UNAVAILABLE = RecallAnswer("recall: the store is unavailable; try again later", True)
COOL_OFF = 5.0
"""Seconds a failed store is not asked again (so a store that is down costs one timeout,
not one per result); a failure :data:`DOWN_AGAIN` seconds after the last is logged."""
DOWN_AGAIN = 60.0
KEPT_MEMORY = 65_536
"""How many originals a shelf on a store that waits on I/O remembers having put (see
:meth:`Shelf.keep`)."""
KEPT_REFRESH = 600.0
"""Seconds after which such an original is sent again even without a TTL (or with a long
one), so that one the store lost behind the shelf's back (a restart without persistence,
an eviction) is back within that time while a request still quotes its handle."""
KEPT_TEXT = 8 * 1024 * 1024
"""Characters of the originals a shelf put that it keeps in memory too (the newest first),
to put one back when a recall finds it missing from the store (answering it at once) and
when a request quotes it once the store may have lost it (:mod:`ctxwin.steps._tend`)."""
REFUSED_MEMORY = 4096
"""How many handles of originals the store refused (over ``max_bytes``, or full) a shelf
remembers, so that the edit that could not quote one says so (:meth:`Shelf.not_kept`)."""
_clock = time.monotonic


@dataclass
class _Notes:
    """What went wrong with the store in one request (or outside any, since one took them)."""

    notes: list[str] = field(default_factory=list)
    refused: int = 0


_REQUEST: ContextVar[_Notes | None] = ContextVar("ctxwin_request_notes", default=None)
"""The notes of the request being applied in this context. ``aapply`` awaits summaries
outside the policy's lock, so two conversations' requests may interleave: each keeps its
own notes (threads and tasks it starts copy the context, so they write to the same)."""


class Shelf:
    """The store of one policy, opened on first use (``store`` or ``factory()``)."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        factory: Callable[[], Store] | None = None,
        ttl: float | None = None,
        url: str = "memory",
    ) -> None:
        self._store = store
        self._factory = factory
        self._lock = threading.Lock()
        self._down_until, self._down_why = 0.0, ""
        self.ttl = ttl
        self.url = mask_url(str(store.url)) if store is not None else url  # url: masked
        self._masked = masking(str(store.url)) if store is not None else str  # its messages
        self._outside = _Notes()  # failures outside any request, since one took them
        self._kept: OrderedDict[str, float] = OrderedDict()  # handles put, when (oldest first)
        self._texts: OrderedDict[str, str] = OrderedDict()  # the newest's, to KEPT_TEXT chars
        self._text_chars = 0
        self._refused: OrderedDict[str, bool] = OrderedDict()
        """Handles the store refused (:data:`REFUSED_MEMORY` of them): for size, or full?"""
        self._unkept: OrderedDict[str, None] = OrderedDict()  # noted by keep_from_store
        self._tending = Tending()
        self.confirmed = Confirmed()  # handles of ctxwin's notices found kept
        self._reopened = 0
        self.lost_at = -math.inf
        """When a recall last found missing an original put here: what was put before, the
        store may have lost too (a flush, a restart, an eviction). ``_clock`` time."""

    @property
    def local(self) -> bool:
        """Whether the store is this process's memory (its calls never wait on I/O)."""
        if self._store is not None:
            return isinstance(self._store, MemoryStore)
        return self.url == "memory"

    def store(self) -> Store:
        """The store, opened now if need be. Raises StoreError when it cannot be."""
        with self._lock:
            if time.monotonic() < self._down_until:
                raise StoreError(
                    f"not asked again yet after: {self._down_why}", url=self.url, operation="get"
                )
            if self._store is None:  # a failed open is tried again after the cool-off
                assert self._factory is not None
                try:
                    self._store = self._factory()
                except StoreError:
                    raise
                except Exception as e:
                    raise self._as_store_error(e, "open") from e
            return self._store

    def _as_store_error(self, error: Exception, operation: str) -> StoreError:
        """``error`` (not a StoreError) as the StoreError the contract asks for: a store
        object of the user's may let its driver's own exception out (a
        ``ConnectionError``), which must not break a request any more than a StoreError
        does. Its message may quote the store's password: masked."""
        said = self._masked(f"{self.url}: {operation} failed: {type(error).__name__}: {error}")
        return StoreError(said[:500], url=self.url, operation=operation)

    def _get(self, key: str) -> bytes | None:
        """The store's value under ``key`` (bytes or None), every failure a StoreError:
        a value of another type too (a user's client that decodes responses)."""
        try:
            raw = self.store().get(key)
        except StoreError:
            raise
        except Exception as e:
            raise self._as_store_error(e, "get") from e
        if isinstance(raw, bytearray | memoryview):
            return bytes(raw)
        return check_value(self.url, key, raw, "a store must give back bytes or None")

    @contextmanager
    def request(self) -> Iterator[None]:
        """The scope of one request: the store's failures in it go to its own report."""
        token = _REQUEST.set(_Notes())
        try:
            yield
        finally:
            _REQUEST.reset(token)

    def _failed(self, error: StoreError, what: str) -> None:
        bucket = _REQUEST.get() or self._outside
        if error.refused and what == _KEEPING and over_limit(error):
            with self._lock:
                bucket.refused += 1
            return
        cooling = str(error).startswith("not asked again yet")
        why = self._masked(str(error))  # a user's store's own StoreError too
        note = f"store {self.url} failed ({what}): {why}; fell back"
        if error.refused:  # full (a Redis at maxmemory, a disk): up, reads answered
            note = f"store {self.url} refused a value ({what}): {why}; not kept"
        with self._lock:
            if cooling and bucket.notes:  # the failure that began the cool-off: said once
                return
            if not cooling and not error.refused:
                if time.monotonic() - self._down_until > DOWN_AGAIN:  # once an outage
                    logger.warning("ctxwin: %s", note)
                self._down_until = time.monotonic() + COOL_OFF
                self._down_why = why[:200]
            if note not in bucket.notes:
                bucket.notes.append(note)

    def take_notes(self) -> list[str]:
        """The failures of the request in this context, and those outside any request
        since a request last took them."""
        mine = _REQUEST.get() or _Notes()
        with self._lock:
            outside, self._outside = self._outside, _Notes()
            notes = [*outside.notes, *(n for n in mine.notes if n not in outside.notes)]
            refused = outside.refused + mine.refused
            mine.notes, mine.refused = [], 0
        if refused:
            what = "original was" if refused == 1 else "originals were"
            notes.append(
                f"store {self.url}: {refused} {what} over its size limit (store.max_bytes) and "
                "not kept: no recall handle for them"
            )
        return notes

    # ----------------------------------------------------------------- recall

    def keep(self, text: str) -> str | None:
        """Keep ``text`` for recall; its handle, or None when the store failed or refused
        it (:meth:`not_kept` says which).

        A handle names its content, so on a store that waits on I/O an original this shelf
        has already put (among the last :data:`KEPT_MEMORY`) is not sent again while it has
        more than half its TTL to live, nor for :data:`KEPT_REFRESH` seconds: a result
        shortened at entry and cleared later costs one round trip, not two."""
        handle = handle_of(text)
        if not self.local and not self.stale((handle,)):
            self._remember(handle, text, put=False)
            return handle
        return handle if self.put_again(handle, text) else None

    def put_again(self, handle: str, text: str) -> bool:
        """Put ``text``, the original of ``handle``, now; False when the store failed or
        refused it (noted)."""
        try:
            self.store().put(_RECALL + handle, utf8(text), ttl=self.ttl)
        except Exception as caught:  # a user's store may let its driver's error out
            e = caught if isinstance(caught, StoreError) else self._as_store_error(caught, "put")
            with self._lock:
                self._refused.pop(handle, None)
                if e.refused:
                    self._refused[handle] = over_limit(e)
                    if len(self._refused) > REFUSED_MEMORY:
                        self._refused.popitem(last=False)
            self._failed(e, _KEEPING)
            return False
        self._remember(handle, text, put=True)
        return True

    def _remember(self, handle: str, text: str, *, put: bool) -> None:
        """Note that ``handle`` was put (``put``: just now), keeping its original too."""
        with self._lock:
            if put:
                self._kept[handle] = _clock()
                self._kept.move_to_end(handle)
                if len(self._kept) > KEPT_MEMORY:
                    self._kept.popitem(last=False)
            if handle in self._texts:
                self._texts.move_to_end(handle)
                return
            self._texts[handle] = text
            self._text_chars += len(text)
            while self._text_chars > KEPT_TEXT and self._texts:
                self._text_chars -= len(self._texts.popitem(last=False)[1])

    def why_not_kept(self, handle: str) -> NotKept:
        """Why :meth:`keep` did not keep the original of ``handle``: the store refused it
        (over ``max_bytes``, or full: the store is up), or failed."""
        with self._lock:
            over = self._refused.get(handle)
        if over is None:
            return "store_down"
        return "over_max_bytes" if over else "full"

    def not_kept(self, handle: str, *, cleared: bool = False) -> str:
        """The ``fallback`` of an edit whose original (``handle``) :meth:`keep` did not
        keep (:meth:`why_not_kept`); ``cleared``: a window clearing's."""
        return fallback_of(self.why_not_kept(handle), cleared=cleared)

    def keep_from_store(self, handles: list[str]) -> None:
        """Originals due to be put again (:mod:`._tend`) that neither memory nor the request
        holds (another worker's, a restart): put again from the store while it holds them;
        noted once, under a TTL, when it does not."""
        ttl = self.ttl if self.ttl is not None else getattr(self._store, "ttl", None)
        if not isinstance(ttl, int | float):
            return
        new = []
        for handle in handles:
            try:
                raw = self._get(_RECALL + handle)
            except StoreError:
                break  # the store failed: nothing to say of what it holds
            text = stored_text(handle, raw) if raw is not None else None
            if text is not None and self.put_again(handle, text):
                continue
            with self._lock:
                if handle not in self._unkept:
                    self._unkept[handle] = None
                    new.append(handle)
                if len(self._unkept) > REFUSED_MEMORY:
                    self._unkept.popitem(last=False)
        if new:
            some = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
            note = (
                f"store {self.url}: the originals of {some}, which the request quotes, were not "
                "put again: no longer in this policy's memory, nor in the request or the store"
            )
            with self._lock:
                (_REQUEST.get() or self._outside).notes.append(note)

    def tend(self, before: Conversation, after: Conversation) -> None:
        """Put again what a request (``after``, as sent; ``before``, as it came) quotes
        that the store may have lost (:mod:`ctxwin.steps._tend`), even on a shelf that has
        put nothing (a fresh worker: a client's history quotes others' handles). In this
        process's memory without a TTL, before a loss, nothing: never due."""
        if self.local and self.lost_at == -math.inf and self.life() == math.inf:
            return
        look = getattr(self._store, "reopen_if_replaced", None)  # a SQLite store: a stat
        reopened = look() if callable(look) else getattr(self._store, "reopened", 0)
        if reopened != self._reopened:  # its file deleted, made anew: what it held is lost
            self._reopened, self.lost_at = reopened, _clock()
        if self.lost_at > -math.inf or self.life() < math.inf:
            self._tending(self, before, after)

    @staticmethod
    def clock() -> float:
        """The shelf's clock (monotonic seconds)."""
        return _clock()

    def life(self) -> float:
        """Seconds after its put that an original is put again while it is quoted: half
        the TTL (the policy's ``store.ttl``, else the store's own), at most
        :data:`KEPT_REFRESH`; never by time in this process's memory without a TTL (only
        this policy reads it: a recall that finds one missing puts it back)."""
        ttl = self.ttl if self.ttl is not None else getattr(self._store, "ttl", None)
        if isinstance(ttl, int | float):
            return min(ttl / 2, KEPT_REFRESH)
        return math.inf if self.local else KEPT_REFRESH

    @property
    def cooling(self) -> bool:
        """Whether the store failed lately and is left alone (:data:`COOL_OFF`)."""
        return time.monotonic() < self._down_until

    def stale(self, handles: Iterable[str]) -> list[str]:
        """Those of ``handles`` to put again: this shelf has not put them, or put them
        :meth:`life` ago or more, or before a recall found the store had lost one."""
        since = max(self.lost_at, _clock() - self.life())
        with self._lock:
            kept = self._kept
            return [h for h in handles if (at := kept.get(h)) is None or at <= since]

    def text_of(self, handle: str) -> str | None:
        """The original of ``handle`` if this shelf put it lately and keeps it in memory."""
        with self._lock:
            return self._texts.get(handle)

    def fetch(self, handle: str, what: str = "recalling") -> RecallAnswer:
        """The original kept under ``handle``, or an error answer saying why (noted: ``what``)."""
        if not HANDLE_RE.fullmatch(handle):
            return RecallAnswer(
                f"recall: {handle!r:.60} is not a handle (handles look like r-3f9a2c1b0d4e5a67)",
                True,
            )
        try:
            raw = self._get(_RECALL + handle)
        except StoreError as e:
            self._failed(e, f"{what} {handle}")
            text = self.text_of(handle)  # put by this policy lately: the same content
            if text is not None:
                return RecallAnswer(text)
            return _UNAVAILABLE  # no URL nor driver message: the notes and the log say them
        if raw is None:
            return self._missing(handle)
        text = stored_text(handle, raw)
        return RecallAnswer(text) if text is not None else self._missing(handle, corrupted=True)

    def _missing(self, handle: str, *, corrupted: bool = False) -> RecallAnswer:
        """The answer for a handle the store does not hold (or holds ``corrupted``: a torn
        or foreign write). One this shelf put, lost (an eviction, a restart, its TTL, a
        damaged row), says the store lost the rest too: the next request of each
        conversation puts again every original it quotes. This one is put back now, and
        answered, when the shelf still has it in memory."""
        with self._lock:
            lost = handle in self._kept or handle in self._texts
            if lost:
                self.lost_at = _clock()
            text = self._texts.get(handle)
        if text is not None:
            self.put_again(handle, text)  # a failure is noted; the answer stands
            return RecallAnswer(text)
        what = f"the value kept for {handle} is corrupted"
        if lost:
            what = what if corrupted else f"the store no longer holds {handle} (expired or evicted)"
            return RecallAnswer(
                f"recall: {what}; it is kept again with the next request that still holds the "
                "result: try again then",
                True,
            )
        if corrupted:
            return RecallAnswer(f"recall: {what}", True)
        return RecallAnswer(f"recall: unknown handle {handle} (expired or never kept)", True)

    def recall(self, handle: str, lines: object = None, grep: object = None) -> RecallAnswer:
        """What the recall tool answers: the original, whole or in part (an error answer,
        never an exception, for what a model may send: ``grep`` not a string too)."""
        if grep is not None and not isinstance(grep, str):
            return GREP_NOT_TEXT
        found = self.fetch(handle.strip() if isinstance(handle, str) else str(handle))
        if found.is_error or (absent(lines) and not grep):
            return found
        return part_of(found.text, handle, lines, grep)

    # ----------------------------------------------------------------- summaries

    @staticmethod
    def summary_key(
        text: str, tool: str, max_tokens: int, instructions: str, summarizer: str
    ) -> str:
        head = json.dumps([tool, max_tokens, instructions, summarizer], ensure_ascii=True)
        return _SUMMARY + hashlib.sha256(utf8(head + "\n" + text)).hexdigest()

    def summary(self, key: str) -> str | None:
        """A summary another process (or this one) computed, or None."""
        try:
            raw = self._get(key)
        except StoreError as e:
            self._failed(e, "reading a summary")
            return None
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self._failed(StoreError("not UTF-8", url=self.url, operation="get"), "a summary")
            return None

    def keep_summary(self, key: str, summary: str) -> str:
        """Share ``summary``; the summary to send: the one the store holds under ``key``
        when another worker (or request) wrote it first, else ``summary``. A store's
        ``put_new`` (the built-in ones have it) writes only when there is none, in one
        step; a store object without it is read first, then written."""
        value = summary.encode("utf-8")
        try:
            store = self.store()
            put_new = getattr(store, "put_new", None)
            if callable(put_new):
                raw = put_new(key, value, ttl=self.ttl)
            else:
                raw = store.get(key)
                if raw is None:
                    store.put(key, value, ttl=self.ttl)
        except StoreError as e:
            self._failed(e, "keeping a summary")
            return summary
        except Exception as e:
            self._failed(self._as_store_error(e, "put"), "keeping a summary")
            return summary
        if not isinstance(raw, bytes | bytearray) or raw == value:
            return summary
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return summary


def shelf_for(config: StoreConfig, given: Store | str | None) -> Shelf:
    """The shelf of a policy: the store it was given (an object or a URL), else its
    ``store:`` setting; opened on first use."""
    if given is not None and not isinstance(given, str):
        return Shelf(given, ttl=config.ttl)
    url = given if given is not None else config.url
    if url.startswith(tuple(f"{s}://" for s in REDIS_SCHEMES)):  # no client: hint at load
        lazy_require("redis", "redis", f"the store {mask_url(url)}")

    def open_it() -> Store:
        return open_store(url, timeout=config.timeout, ttl=config.ttl, max_bytes=config.max_bytes)

    return Shelf(factory=open_it, ttl=config.ttl, url=mask_url(url))
