"""The policy's store as steps use it: recall originals and the shared summary memo.

Content is keyed by a hash of it, so a handle is the same on every machine and ``apply``
stays a pure function of (history, policy). The store is opened on first use. A store that
is down, slow or refusing never breaks a request: each failure is a note for the report,
and the caller falls back (a placeholder without a handle, a summary computed here).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxwin._core.model import Opaque, ToolResult
from ctxwin._exceptions import StoreError
from ctxwin._lazy import require as lazy_require
from ctxwin._policy.schema import DEFAULT_PLACEHOLDER, RECALL_PLACEHOLDER, StoreConfig
from ctxwin.steps._grep import grep_lines
from ctxwin.stores import Store, open_store
from ctxwin.stores._base import REDIS_SCHEMES, check_value, mask_url
from ctxwin.stores.memory import MemoryStore

if TYPE_CHECKING:
    from ctxwin.steps._base import Context

__all__ = [
    "CLEARED_STORE_DOWN",
    "HANDLE_DIGITS",
    "HANDLE_RE",
    "OLD_HANDLE_DIGITS",
    "RecallAnswer",
    "Shelf",
    "handle_of",
    "placeholder_text",
    "recall_handle",
    "shelf_for",
]

HANDLE_DIGITS = 16
"""Hex digits of the SHA-256 in a handle: 64 bits, so that among n originals in one store
two share a handle with a chance of about n²/2⁶⁵ (3·10⁻⁶ at ten million)."""
OLD_HANDLE_DIGITS = 12
"""Hex digits of the handles ctxwin wrote before (48 bits: ~n²/2⁴⁹, 16% at ten million).
A placeholder written then may still be in a conversation: its handle is still recalled,
from the key it was kept under."""
HANDLE_RE = re.compile(rf"\br-(?:[0-9a-f]{{{HANDLE_DIGITS}}}|[0-9a-f]{{{OLD_HANDLE_DIGITS}}})\b")
"""A recall handle as it appears in a placeholder or notice (16 hex digits, or 12 from
before)."""

CLEARED_STORE_DOWN = "store_down: cleared without a recall handle"
"""The ``fallback`` of a window clearing whose original the store failed to keep (a result
step's edit says ``store_down: kept without a recall handle``)."""

_RECALL = "recall:"
_SUMMARY = "summary:"
COOL_OFF = 5.0
"""Seconds a failed store is not asked again (so a store that is down costs one timeout,
not one per result)."""
KEPT_MEMORY = 65_536
"""How many originals a shelf on a store that waits on I/O remembers having put (see
:meth:`Shelf.keep`)."""
KEPT_REFRESH = 600.0
"""Seconds after which such an original is sent again even without a TTL (or with a long
one), so that one the store lost behind the shelf's back (a restart without persistence,
an eviction) is back within that time while a request still quotes its handle."""
_clock = time.monotonic


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def handle_of(text: str) -> str:
    """The recall handle of a content: ``r-`` and 16 hex digits of its SHA-256."""
    return "r-" + hashlib.sha256(_bytes(text)).hexdigest()[:HANDLE_DIGITS]


def _is_handle_of(handle: str, text: str) -> bool:
    """Whether ``handle`` (of either length, see :data:`OLD_HANDLE_DIGITS`) is the handle
    of ``text``: its digits begin the SHA-256 of the text."""
    return hashlib.sha256(_bytes(text)).hexdigest().startswith(handle[2:])


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    """What the recall tool answers: the text, and whether it is an error."""

    text: str
    is_error: bool = False

    def __str__(self) -> str:
        return self.text


@dataclass
class _Notes:
    """What went wrong with the store during one request (or, outside any, since the last
    request took them: a recall answered between two requests)."""

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
        self._down_until = 0.0
        self._down_why = ""
        self.ttl = ttl
        self.url = store.url if store is not None else url
        self._outside = _Notes()
        """Failures outside any request, since a request last took them."""
        self._kept: OrderedDict[str, float] = OrderedDict()
        """Handles this shelf put in a store that waits on I/O, and when (newest last)."""

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
        does."""
        return StoreError(
            f"{self.url}: {operation} failed: {type(error).__name__}: {error}"[:500],
            url=self.url,
            operation=operation,
        )

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

    def _put(self, key: str, value: bytes) -> None:
        try:
            self.store().put(key, value, ttl=self.ttl)
        except StoreError:
            raise
        except Exception as e:
            raise self._as_store_error(e, "put") from e

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
        if error.refused:
            with self._lock:
                bucket.refused += 1
            return
        cooling = str(error).startswith("not asked again yet")
        note = f"store {self.url} failed ({what}): {error}; fell back"
        with self._lock:
            if not cooling:
                self._down_until = time.monotonic() + COOL_OFF
                self._down_why = str(error)[:200]
            elif bucket.notes:  # the failure that began the cool-off is noted: said once
                return
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
        """Keep ``text`` for recall; its handle, or None when the store failed.

        A handle names its content, so on a store that waits on I/O an original this shelf
        has already put (among the last :data:`KEPT_MEMORY`) is not sent again while it has
        more than half its TTL to live, nor for :data:`KEPT_REFRESH` seconds: a result
        shortened at entry and cleared later costs one round trip, not two."""
        handle = handle_of(text)
        remote = not self.local
        if remote and self._kept_lately(handle):
            return handle
        try:
            self._put(_RECALL + handle, _bytes(text))
        except StoreError as e:
            self._failed(e, "keeping an original")
            return None
        if remote:
            with self._lock:
                self._kept[handle] = _clock()
                self._kept.move_to_end(handle)
                if len(self._kept) > KEPT_MEMORY:
                    self._kept.popitem(last=False)
        return handle

    def _kept_lately(self, handle: str) -> bool:
        with self._lock:
            at = self._kept.get(handle)
            if at is None:
                return False
            ttl = self.ttl if self.ttl is not None else getattr(self._store, "ttl", None)
            life = min(ttl / 2, KEPT_REFRESH) if isinstance(ttl, int | float) else KEPT_REFRESH
            if _clock() - at >= life:
                return False
            self._kept.move_to_end(handle)
            return True

    def fetch(self, handle: str) -> RecallAnswer:
        """The original kept under ``handle``, or an error answer that says why not."""
        if not HANDLE_RE.fullmatch(handle):
            return RecallAnswer(
                f"recall: {handle!r:.60} is not a handle (handles look like r-3f9a2c1b0d4e5a67)",
                True,
            )
        try:
            raw = self._get(_RECALL + handle)
        except StoreError as e:
            self._failed(e, f"recalling {handle}")
            return RecallAnswer(f"recall: the store is unavailable ({e}); try again later", True)
        if raw is None:
            return self._missing(handle)
        try:
            text = raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            text = None
        if text is None or not _is_handle_of(handle, text):
            return RecallAnswer(f"recall: the value kept for {handle} is corrupted", True)
        return RecallAnswer(text)

    def _missing(self, handle: str) -> RecallAnswer:
        """The answer for a handle the store does not hold. One this shelf put, lost (an
        eviction, a restart, its TTL), says the store lost the rest too: every original is
        sent again by the next request that quotes it."""
        with self._lock:
            lost = self._kept.pop(handle, None) is not None
            if lost:
                self._kept.clear()
        if lost:
            return RecallAnswer(
                f"recall: the store no longer holds {handle} (expired or evicted); it is kept "
                "again with the next request that still holds the result: try again then",
                True,
            )
        return RecallAnswer(f"recall: unknown handle {handle} (expired or never kept)", True)

    def recall(self, handle: str, lines: object = None, grep: str | None = None) -> RecallAnswer:
        """What the recall tool answers: the original, whole or in part."""
        found = self.fetch(handle.strip() if isinstance(handle, str) else str(handle))
        if found.is_error or (_absent(lines) and not grep):
            return found
        return part_of(found.text, handle, lines, grep)

    # ----------------------------------------------------------------- summaries

    @staticmethod
    def summary_key(
        text: str, tool: str, max_tokens: int, instructions: str, summarizer: str
    ) -> str:
        head = json.dumps([tool, max_tokens, instructions, summarizer], ensure_ascii=True)
        return _SUMMARY + hashlib.sha256(_bytes(head + "\n" + text)).hexdigest()

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

    def keep_summary(self, key: str, summary: str) -> None:
        try:
            self._put(key, summary.encode("utf-8"))
        except StoreError as e:
            self._failed(e, "keeping a summary")


def recall_handle(result: ToolResult, tool: str, ctx: Context) -> str | None:
    """The handle a cleared result's placeholder quotes (its original kept in the store);
    None without recall, or when the result holds more than text (an image, a file: the
    recall tool answers text, so it could not give those back); ``""`` when recall is on
    but the store failed to keep the original, now or when a result step shortened it:
    the placeholder quotes no handle, and its edit says why (:data:`CLEARED_STORE_DOWN`)."""
    if not ctx.recall_on(tool) or ctx.shelf is None:
        return None
    if any(isinstance(part, Opaque) for part in result.content):
        return None
    if result.origin is not None:  # shortened by a result step, which kept the original
        return result.origin  # "": it could not: this text is not the original
    return ctx.shelf.keep(result.text) or ""


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


_RANGE = re.compile(r"\s*([0-9]*)\s*([-:,]|\.\.)?\s*([0-9]*)\s*", re.ASCII)
_DIGITS = 18
"""Digits of a line number read as written; a longer one is past the end of any text (and
``int`` refuses strings of over 4,300 digits)."""


_FAR: int = 10**_DIGITS


def _line_number(number: str | int) -> int:
    """A line number, a huge one held at :data:`_FAR` (so that it can be read and shown)."""
    if isinstance(number, str):
        return int(number) if len(number) <= _DIGITS else _FAR
    return max(-_FAR, min(number, _FAR))


def _line_range(lines: object) -> tuple[int, int | None] | str:
    """``lines`` (``10``, ``"10-20"``, ``"10:20"``, ``[10, 20]``; ``"10-"`` from line 10 to
    the end, ``"-20"`` up to line 20) as a 1-based inclusive range (``None``: to the end), or
    what is wrong with it."""
    if isinstance(lines, bool):
        return f"lines must be a range such as 10-20, not {lines!r}"
    if isinstance(lines, int):
        return (_line_number(lines), _line_number(lines))
    if isinstance(lines, (list, tuple)) and len(lines) == 2:
        a, b = lines
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool | None):
            return (_line_number(a), _line_number(b))
    if isinstance(lines, str):
        m = _RANGE.fullmatch(lines)
        if m and (m.group(1) or m.group(3)):
            first, dash, last = m.groups()
            a = _line_number(first) if first else 1
            if last:
                return (a, _line_number(last))
            return (a, None) if dash else (a, a)
    return f"lines must be a range such as 10-20, not {lines!r:.40}"


def _absent(lines: object) -> bool:
    """Whether ``lines`` is not given: missing, null, or blank (a model under a strict
    schema, where every property is required, sends ``""`` for what it leaves out)."""
    return lines is None or (isinstance(lines, str) and not lines.strip())


def part_of(text: str, handle: str, lines: object, grep: str | None) -> RecallAnswer:
    """The lines of ``text`` asked for: a range (exact, line endings kept), then the lines
    matching ``grep`` (each as ``N:line``, numbered in the original). Lines end at ``\n``
    only, as ``grep -n`` and ``sed`` number them (``str.splitlines`` also breaks at a form
    feed, ``\x1c``-``\x1e``, ``\x85``, U+2028 and a lone ``\r``: a line number the model read
    in a file would name another line)."""
    all_lines = _lines(text)
    first, chosen = 1, all_lines
    if not _absent(lines):
        span = _line_range(lines)
        if isinstance(span, str):
            return RecallAnswer(f"recall: {span}", True)
        a, b = span[0], len(all_lines) if span[1] is None else span[1]
        if a < 1 or b < a:
            return RecallAnswer(f"recall: lines {a}-{b} is not a range (1-based, a <= b)", True)
        if a > len(all_lines):
            return RecallAnswer(
                f"recall: lines {a}-{b} are past the end: {handle} has {len(all_lines)} lines",
                True,
            )
        first, chosen = a, all_lines[a - 1 : b]
    if not grep:
        return RecallAnswer("".join(chosen))
    return RecallAnswer(*grep_lines(chosen, first, handle, grep))


def _lines(text: str) -> list[str]:
    """``text`` as its ``\n``-ended lines, ends kept (the last without one if it has none)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def placeholder_text(template: str, handle: str | None, ctx: Context) -> str:
    """The placeholder template with recall: the recall default in place of the plain
    default, or the recall note after a template that does not quote ``{handle}``."""
    if handle is None:  # no recall, or the store is down: quote no handle
        return DEFAULT_PLACEHOLDER if "{handle}" in template else template
    if template == DEFAULT_PLACEHOLDER:
        return RECALL_PLACEHOLDER
    if "{handle}" not in template:
        return f"{template} {ctx.config.recall.note}"
    return template
