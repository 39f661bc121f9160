"""The recall tool's own answers, paged: an answer over its cap keeps whole lines, and its
notice says which lines it shows and which to ask for next.

A recall answer is capped like any result (``recall.max_tokens``, or the rules of a tool
file naming ``recall``). Cut by tokens and followed by the recall note, the answer to a
recall of a whole original told the agent to recall the same handle for the whole result:
the very call that made it, which answers the same text, capped the same way, every time.
Paged, the answer shows whole lines, numbered as in the original (the call's ``lines`` says
where the answer starts; a ``grep`` answer's lines carry their own numbers), and its notice
names them and the range to ask for next. A line over the cap on its own is shown in part
(``grep`` finds text in it): its start, and the next range starts after it; with ``truncate:
tail``, its end, and the next range ends before it. Every page moves on.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ctxwin._core.model import Opaque, ToolCall, ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._answer import absent, line_range
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._ends import cut_head, cut_tail
from ctxwin.steps._handles import HANDLE_RE

__all__ = ["PAGED_NOTE", "Asked", "asked_of", "page", "paged"]

Mode = Literal["head", "tail", "head_tail"]

PAGED_NOTE = "paged by lines"
"""The note of a recall answer's cap edit (the report's)."""

_NUMBERED = re.compile(r"([0-9]{1,18}):")
"""The start of a line of a grep answer: the line's number in the original (18 digits at
most: a longer run is no number a grep wrote, and ``int`` refuses over 4,300 digits)."""

_SHORT_NOTICE = (
    r"\[(?:line [0-9]+ of [0-9-]+ shown|the match in line [0-9]+ shown"
    r"|[0-9]+ of [0-9]+ matching lines shown, up to line [0-9]+)(?: in part(?:, its end)?)?"
    rf'(?:; next: recall\("{HANDLE_RE.pattern}", lines="[0-9-]+"\)(?: with the same grep)?)?\]'
)
_OVER_CAP = re.compile(f"(?P<head>[^\n]*)\n?{_SHORT_NOTICE}|{_SHORT_NOTICE}\n(?P<tail>[^\n]*\n?)")
"""A page over a cap below its notice, as :func:`page` writes it: the short notice and one
line, or part of one, before it (or after it: the last line, or its end)."""
LEAST = 8
"""Tokens of a line the page over such a cap shows at most (a character may be several)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """What a recall answer holds: lines of the original under ``handle``, the first of
    them numbered ``first`` there, up to ``last`` (None: to the end); ``grep``: the lines
    matching a pattern, each as ``N:line``."""

    handle: str
    first: int = 1
    last: int | None = None
    grep: bool = False


def _arguments(call: ToolCall | None) -> tuple[str, object, str | None] | None:
    """A recall call's handle, lines and grep, as the recall tool reads them; None when they
    are not what it answers lines for."""
    if call is None:
        return None
    try:
        args = json.loads(call.arguments)
    except (ValueError, RecursionError):
        return None
    if not isinstance(args, Mapping):
        return None
    handle, grep = args.get("handle"), args.get("grep")
    if not isinstance(handle, str) or not HANDLE_RE.fullmatch(handle.strip()):
        return None
    if grep is not None and not isinstance(grep, str):
        return None
    return handle.strip(), args.get("lines"), grep


def asked_of(call: ToolCall | None, text: str, own: str) -> Asked:
    """What the recall ``call`` asked for, as its answer ``text`` holds it; the answer as an
    original of its own (``own``, its handle; lines from 1) when the call is not known, or
    its arguments do not say what made ``text``."""
    args = _arguments(call)
    if args is None:
        return Asked(own)
    handle, lines, grep = args
    span = (1, None) if absent(lines) else line_range(lines)
    if isinstance(span, str):
        return Asked(own)
    if grep:  # a grep answer's lines say their numbers ("no line matches": not paged)
        return Asked(handle, span[0], span[1], grep=True) if _NUMBERED.match(text) else Asked(own)
    if absent(lines):  # the whole original: the handle asked, when this text is its original
        return Asked(handle) if own.startswith(handle) else Asked(own)
    return Asked(handle, span[0], span[1])


# ---------------------------------------------------------------------------- the page


@dataclass(frozen=True, slots=True)
class _Page:
    """What a page shows, in the original's line numbers."""

    shown: tuple[tuple[int, int], ...]
    """The spans of lines shown (one, or the head and the tail)."""
    of: str
    """The lines the answer holds (``3000``, ``100-3000``); grep: ``""``."""
    rest: tuple[int, int | None] | None
    """The lines to ask for next (None: none)."""
    in_part: bool = False
    """The one line shown is shown in part (over the cap on its own)."""
    matches: tuple[int, int] = (0, 0)
    """A grep answer's lines shown, and all of them."""
    end: bool = False
    """The line shown in part is shown by its end (``tail``), not its start."""


def _count_lines(text: str) -> int:
    """Lines of ``text``, ended at ``\n`` (the last one without one if it has none)."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _range(a: int, b: int | None) -> str:
    return f"{a}-" if b is None else (str(a) if a == b else f"{a}-{b}")


def _notice(pg: _Page, handle: str, *, short: bool) -> str:
    """The page's notice: what it shows, and the call that gives the next lines."""
    spans = " and ".join(_range(a, b) for a, b in pg.shown)
    many = len(pg.shown) > 1 or pg.shown[0][0] != pg.shown[0][1]
    if pg.of:  # lines of the original
        what = f"{'lines' if many else 'line'} {spans} of {pg.of} shown"
    elif pg.in_part:
        what = f"the match in line {spans} shown"
    else:
        shown, found = pg.matches
        what = f"{shown} of {found} matching lines shown, up to line {pg.shown[0][1]}"
    if pg.in_part:
        what += " in part" + (", its end" if pg.end else "")
        why = "longer than one answer holds" + ("; grep finds text in it" if pg.of else "")
    else:
        why = "the most one answer holds"
    grep = "" if pg.of else " with the same grep"
    ask = "" if pg.rest is None else f'recall("{handle}", lines="{_range(*pg.rest)}")'
    if short:
        return f"[{what}; next: {ask}{grep}]" if ask else f"[{what}]"
    if not ask:
        return f"[recall: {what} ({why}).]"
    more = grep or ("" if pg.in_part else "; grep finds lines")
    return f"[recall: {what} ({why}). Next: {ask}{more}.]"


def _whole_head(text: str, n: int, ctx: Context) -> str:
    """The longest start of ``text`` of whole lines within ``n`` tokens."""
    part = cut_head(text, n, ctx)
    if len(part) >= len(text):
        return text
    return text[: part.rfind("\n") + 1]  # what comes before the last newline is exact


def _whole_tail(text: str, n: int, ctx: Context) -> str:
    """The longest end of ``text`` of whole lines within ``n`` tokens."""
    part = cut_tail(text, n, ctx)
    if len(part) >= len(text):
        return text
    if part and text[-len(part) - 1] == "\n" and text.endswith(part):
        return part  # cut where a line starts
    start = part.find("\n")  # what follows the first newline is exact
    return text[len(text) - (len(part) - start - 1) :] if start >= 0 else ""


_REPLACED = "\ufffd"
"""What a decode writes for a character it cannot give: one the tokenizer replaced (a lone
surrogate) or, with some decoders, a character whose bytes a cut split between tokens."""


def _agree(part: str, own: str) -> int:
    """How many characters from the start of ``part`` are ``own``'s, or stand for one."""
    for i, (c, o) in enumerate(zip(part, own, strict=False)):
        if c != o and c != _REPLACED:
            return i
    return min(len(part), len(own))


def _part_head(text: str, n: int, ctx: Context) -> str:
    """The start of ``text`` within ``n`` tokens, in its own characters (the decoded cut
    reads U+FFFD for a lone surrogate), without a character cut in two."""
    part = cut_head(text, n, ctx)
    if text.startswith(part):
        return part
    k = _agree(part, text)
    for _ in range(3):  # a last U+FFFD may be a character split between tokens
        if not k or part[k - 1] != _REPLACED or ctx.count(text[:k]) <= n:
            break
        k -= 1
    return text[:k]


def _part_tail(text: str, n: int, ctx: Context) -> str:
    """The end of ``text`` within ``n`` tokens, as :func:`_part_head` its start."""
    part = cut_tail(text, n, ctx)
    if text.endswith(part):
        return part
    k = _agree(part[::-1], text[: -len(part) - 1 : -1])
    for _ in range(3):  # a split character's bytes: up to three U+FFFD
        if not k or part[-k] != _REPLACED or ctx.count(text[-k:]) <= n:
            break
        k -= 1
    return text[len(text) - k :]


def _head_tail(text: str, keep: int, ctx: Context) -> tuple[str, str]:
    """Whole lines from both ends within ``keep`` tokens: half for the head, what it leaves
    for the tail; one side takes it all where a line at the other end is too long for it."""
    head = _whole_head(text, keep - keep // 2, ctx)
    rest = text[len(head) :]
    tail = _whole_tail(rest, keep - ctx.count(head), ctx) if rest else ""
    if not tail:  # the last line is over what the head leaves
        head = _whole_head(text, keep, ctx)
    return head, tail


def _cut(text: str, keep: int, mode: Mode, ctx: Context) -> tuple[str, str, bool]:
    """The whole lines of ``text`` kept within ``keep`` tokens (head, tail) or, when not
    one fits, part of one line: the start of the first (the end of the last, in ``tail``
    mode); whether it is that."""
    head = tail = ""
    if mode == "head":
        head = _whole_head(text, keep, ctx)
    elif mode == "tail":
        tail = _whole_tail(text, keep, ctx)
    else:
        head, tail = _head_tail(text, keep, ctx)
    if head or tail:
        return head, tail, False
    if mode == "tail":
        return "", _part_tail(text, keep, ctx), True
    return _part_head(text, keep, ctx), "", True


def _page_of(
    text: str, head: str, tail: str, in_part: bool, ask: Asked, *, end: bool = False
) -> _Page:
    """What a cut of ``text`` to ``head`` and ``tail`` shows (``end``: a line in part is
    the last, by its end, though nothing of it is shown)."""
    total = _count_lines(text)
    if ask.grep:  # paged from the head only: the rest is the lines after the last shown
        # the last line shown: its number in the original (a line in part: the first, whose
        # number a small cap may cut)
        line = text if in_part else head.rstrip("\n").rsplit("\n", 1)[-1]
        found = _NUMBERED.match(line)
        upto = int(found.group(1)) if found else ask.first
        k = _count_lines(head)
        rest = (upto + 1, ask.last) if total > k else None
        return _Page(((upto if in_part else ask.first, upto),), "", rest, in_part, (k, total))
    a, last = ask.first, ask.first + total - 1
    of = str(total) if a == 1 and ask.last is None else f"{a}-{last}"
    if in_part and (tail or end):  # the end of the last line
        return _Page(((last, last),), of, (a, last - 1) if total > 1 else None, True, end=True)
    if in_part:
        return _Page(((a, a),), of, (a + 1, last) if total > 1 else None, True)
    k, t = _count_lines(head), _count_lines(tail)
    spans = tuple(s for s in ((a, a + k - 1), (last - t + 1, last)) if s[1] >= s[0])
    return _Page(spans, of, (a + k, last - t) if a + k <= last - t else None)


@dataclass(frozen=True, slots=True)
class _Fit:
    text: str
    fits: bool
    in_part: bool
    shows: bool
    """Some of the original is shown (not the notice alone)."""


def _join(head: str, notice: str, tail: str) -> str:
    out = head if not head or head.endswith("\n") else head + "\n"
    return out + notice + ("\n" + tail if tail else "")


def _widest(text: str, mode: Mode, ask: Asked, ctx: Context, *, short: bool) -> int:
    """The tokens of the longest notice a page of ``text`` can have in ``mode``: whole
    lines (two spans in ``head_tail``) or one line in part, its figures the largest there."""
    total = _count_lines(text)
    last, of = ask.first + total - 1, ""
    if ask.grep:  # its lines carry their numbers, the last the largest
        found = _NUMBERED.match(text[text.rfind("\n", 0, len(text) - 1) + 1 :])
        last = max(int(found.group(1)) if found else last, ask.last or 0)
    else:
        of = str(total) if ask.first == 1 and ask.last is None else f"{ask.first}-{last}"
    wide = (last, last + 1)
    forms = (
        _Page((wide, wide) if mode == "head_tail" else (wide,), of, wide, matches=(total, total)),
        _Page(((last, last),), of, wide, True, end=mode == "tail"),
    )
    return max(ctx.count(_notice(pg, ask.handle, short=short)) for pg in forms)


def _at(
    text: str, keep: int, limit: int, mode: Mode, ask: Asked, ctx: Context, *, short: bool
) -> tuple[_Fit, int]:
    """The page of ``text`` cut to ``keep`` tokens, and how far it is over ``limit``."""
    head, tail, in_part = _cut(text, keep, mode, ctx)
    pg = _page_of(text, head, tail, in_part, ask, end=mode == "tail")
    out = _join(head, _notice(pg, ask.handle, short=short), tail)
    over = ctx.count(out) - limit
    shown = head or tail
    if in_part:  # something of the line: past a grep answer's number, before its end
        number = _NUMBERED.match(text) if ask.grep else None
        shown = (shown[number.end() :] if number else shown).rstrip("\r\n")
    return _Fit(out, over <= 0, in_part, bool(shown)), over


def _fit(text: str, limit: int, mode: Mode, ask: Asked, ctx: Context, *, short: bool) -> _Fit:
    """``text`` paged to ``limit`` tokens with the (short) notice, shaved where the page
    came out over (its pieces count differently joined)."""
    probe = _widest(text, mode, ask, ctx, short=short)
    budget, more = limit, 0
    while True:  # the budget shrinks faster each time: a cut by lines may need more to move
        keep = max(budget - probe - 2, 0)
        fit, over = _at(text, keep, limit, mode, ask, ctx, short=short)
        if over <= 0 or keep == 0:
            break
        budget -= over + more
        more = 2 * more + 1
    if fit.shows:
        return fit
    # the notice alone: the room it leaves (joined, the pieces may count less)
    for keep in range(-over + 1, 0, -1):
        tried, over = _at(text, keep, limit, mode, ask, ctx, short=short)
        if over <= 0 and tried.shows:
            return tried
    # nothing of the line within the limit (a character may be several tokens): the least
    # that shows some, over it, rather than a notice that sends the agent past the line
    for keep in range(1, LEAST + 1):
        tried = _at(text, keep, limit, mode, ask, ctx, short=short)[0]
        if tried.shows:
            return tried
    return fit


def page(text: str, limit: int, mode: Mode, ask: Asked, ctx: Context) -> tuple[str, bool]:
    """``text`` paged to ``limit`` tokens, notice included, and whether it fits: over the
    limit only when the short notice and the start of one line are. The short notice
    stands in where the long one leaves no room for a whole line."""
    mode = "head" if ask.grep else mode
    first = _fit(text, limit, mode, ask, ctx, short=False)
    if first.fits and not first.in_part:
        return first.text, True
    second = _fit(text, limit, mode, ask, ctx, short=True)
    if (second.fits and not second.in_part) or not first.fits:
        return second.text, second.fits
    if second.fits and second.shows and not first.shows:  # the long notice left no room
        return second.text, True
    return first.text, True


def _written(text: str, ctx: Context) -> bool:
    """Whether ``text`` is a page :func:`page` wrote over a cap below its notice: the short
    notice and at most :data:`LEAST` tokens of one line (an original that merely holds such
    a notice among its lines is paged)."""
    found = _OVER_CAP.fullmatch(text) if len(text) <= 2_000 else None
    part = found and (found.group("head") if found.group("tail") is None else found.group("tail"))
    return part is not None and ctx.count(part) <= LEAST


def paged(
    result: ToolResult, info: ResultInfo, call: ToolCall | None, ctx: Context
) -> tuple[ToolResult, tuple[Edit, ...]] | None:
    """A recall answer over its cap, paged, and the cap's edit; None when it is not paged
    (it fits, it is an error, no cap, recall off or the store failed to keep it)."""
    rules = info.rules.rules if info.rules is not None else None
    if rules is None or rules.max_tokens is None or result.is_error or ctx.shelf is None:
        return None
    if not ctx.recall_on(info.tool) or any(isinstance(p, Opaque) for p in result.content):
        return None
    text, limit = result.text, rules.max_tokens
    total = ctx.count(text)
    if total <= limit:
        return None
    if _written(text, ctx):  # a page over a cap below its notice: left as it is
        return result, ()
    own = ctx.shelf.keep(text)  # what a placeholder clearing the page later quotes
    if own is None:
        return None  # the cap then cuts it without quoting a handle
    new, fits = page(text, limit, rules.truncate, asked_of(call, text, own), ctx)
    notes = (PAGED_NOTE, None if fits else f"max_tokens {limit:,} is below the notice")
    edit = Edit(
        step="cap",
        tool=info.tool,
        call_id=info.call_id,
        tokens_before=total,
        tokens_after=ctx.count(new),
        note="; ".join(n for n in notes if n),
        message_index=info.message_index,
        chars_before=len(text),
        chars_after=len(new),
    )
    return dataclasses.replace(result.with_text(new), origin=own), (edit,)
