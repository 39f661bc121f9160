"""Capping JSON on its structure: whole items kept, the notice inside, valid JSON out.

A result whose text is a JSON array or object is cut between its items (array elements,
object members) instead of inside them: the cap keeps whole items from the head, the tail
or both ends, and says what it left out in an item of its own, ``{"...": notice}`` in an
array, a ``"...": notice`` member in an object. The output is written like the original
(compact, spaced or indented; non-ASCII kept).

- When one item holds most of the value (``{"matches": [...], "total": 80}``), the others
  are kept and the cut goes down into it (at most :data:`MAX_DIVE` levels); a string is
  cut there like a text, the notice inside the string.
- When no whole item fits, the edge item is cut inside the same way, or else the notice
  alone stands for the value, written compact if the original's layout does not fit.
- A string (the whole text a JSON string) is cut the same way: its characters, not its
  escapes, are cut and the notice goes inside it, so it stays one JSON string.
- Text that is not an array, object or string, is over :data:`MAX_JSON_CHARS` characters,
  nests deeper than :data:`MAX_NESTING`, or where not even the notice fits as JSON, is
  left to the text cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from math import isqrt
from typing import Literal

from ctxwin._core.jsontext import depth_over
from ctxwin._core.jsontext import inexact as is_inexact
from ctxwin.steps._base import Context
from ctxwin.steps._ends import cut_head, cut_tail

__all__ = [
    "JSON_CUT_NOTE",
    "MAX_DIVE",
    "MAX_JSON_CHARS",
    "MAX_NESTING",
    "NOTICE_KEY",
    "cut_json",
    "holds_any",
    "load_json",
    "sendable",
]

JSON_CUT_NOTE = "cut on JSON structure"
"""The note of the cap's edit when the result was cut on its JSON structure."""
NOTICE_KEY = "..."
"""The key the notice is written under (made longer when an object already has it)."""
MAX_NESTING = 100
"""Values nesting deeper than this are cut as text."""
MAX_JSON_CHARS = 2_000_000
"""Texts longer than this (characters) are not parsed to be cut on their structure: they
are cut as text."""
MAX_DIVE = 3
"""How many levels a cut goes down into an item that holds most of the value."""
_RETRIES = 6

Mode = Literal["head", "tail", "head_tail"]
Container = list[object] | dict[str, object]

_SURROGATE = re.compile("[\ud800-\udfff]")


def load_json(text: str) -> tuple[object, frozenset[float]]:
    """The JSON value of ``text`` (a leading byte order mark skipped, as ``json.loads``
    raises on it), and the floats of it that are not the number their literal wrote
    (``1e400`` read as infinity, ``3.14159265358979323846`` rounded): written back, they
    would say another number. Raises what ``json.loads`` raises."""
    if text.startswith("\ufeff"):
        text = text[1:]
    inexact: set[float] = set()

    def exact_float(literal: str) -> float:
        number = float(literal)
        if is_inexact(literal, number):
            inexact.add(number)
        return number

    return json.loads(text, parse_float=exact_float), frozenset(inexact)


def holds_any(value: object, numbers: frozenset[float]) -> bool:
    """Whether ``value`` holds one of ``numbers`` (iterative: any depth)."""
    if not numbers:
        return False
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and node in numbers:
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def sendable(text: str, *, json_text: bool) -> str:
    """``text`` without lone surrogates, which no request can carry (UTF-8 cannot encode
    them: the HTTP client raises): escaped in JSON text (``\\ud83d``, the same string once
    parsed), U+FFFD in plain text. JSON escapes (``"\\ud83d"``) read them into a value."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    if json_text:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class _Style:
    """How the original was written: on one line (compact or spaced) or indented."""

    indent: str | None
    item_sep: str
    key_sep: str

    def dumps(self, value: object, depth: int = 0) -> str:
        """``value`` as it is written ``depth`` levels down in the output."""
        text = json.dumps(
            value,
            ensure_ascii=False,
            indent=self.indent,
            separators=(self.item_sep, self.key_sep),
        )
        if self.indent and depth:  # JSON strings hold no raw newline: only layout is hit
            text = text.replace("\n", "\n" + self.indent * depth)
        return sendable(text, json_text=True)

    def piece(self, key: str | None, value: object, depth: int) -> str:
        """One item of a container at ``depth``, with what separates it from the next."""
        member = "" if key is None else json.dumps(key, ensure_ascii=False) + self.key_sep
        body = member + self.dumps(value, depth + 1)
        if self.indent is None:
            return body + self.item_sep
        return "\n" + self.indent * (depth + 1) + body + self.item_sep


@dataclass(frozen=True, slots=True)
class _Cut:
    """A container cut down: the items kept before the notice, after it, and whether the
    notice is written here (a cut that went down into one item carries none itself)."""

    is_dict: bool
    before: list[tuple[str | None, object]]
    after: list[tuple[str | None, object]]
    marker: bool
    key: str = NOTICE_KEY


@dataclass(frozen=True, slots=True)
class _Text:
    """A string cut like a text: its head and tail kept, the notice between them."""

    head: str
    tail: str


@dataclass(frozen=True, slots=True)
class _Job:
    """What every level of one cut shares."""

    mode: Mode
    probe: str
    """The notice with its largest figures, to measure what it takes."""
    style: _Style
    ctx: Context

    def tokens(self, value: object, depth: int) -> int:
        return self.ctx.count(self.style.dumps(value, depth))


def cut_json(
    text: str,
    limit: int,
    mode: Mode,
    notice: str,
    fields: dict[str, object],
    ctx: Context,
) -> tuple[str, int, int] | None:
    """``text`` cut on its JSON structure to at most ``limit`` tokens, notice included, as
    :func:`~ctxwin.steps._cut.truncate` returns it (new text, tokens kept, total);
    ``None`` when the text is to be cut as text."""
    value = _value(text)
    if value is None:
        return None
    style = COMPACT if isinstance(value, str) else _style(text, value)
    total = ctx.count(text)
    for attempt in (style, COMPACT) if style != COMPACT else (style,):  # compact if need be
        cut = _fit(value, limit, total, attempt, mode, notice, fields, ctx)
        if cut is not None:
            return cut
    return None


COMPACT = _Style(None, ",", ":")


def _fit(
    value: Container | str,
    limit: int,
    total: int,
    style: _Style,
    mode: Mode,
    notice: str,
    fields: dict[str, object],
    ctx: Context,
) -> tuple[str, int, int] | None:
    """``value`` cut and written in ``style`` within ``limit`` tokens, if it can be."""
    budget = limit
    for _ in range(_RETRIES):
        probe = notice.format(
            omitted_tokens=total, total_tokens=total, kept_tokens=budget, **fields
        )
        plan = _plan(value, budget, _Job(mode, probe, style, ctx))
        if plan is None:
            return None
        if not _marked(plan):  # everything fits once written in the original's style
            out = style.dumps(_render(plan, ""))
            kept = ctx.count(out)
            if kept <= limit:
                return out, kept, total
            budget -= kept - limit
            continue
        shown = ctx.count(style.dumps(_render(plan, probe)))
        kept = min(max(shown - ctx.count(probe), 0), total)
        note = notice.format(
            omitted_tokens=total - kept, total_tokens=total, kept_tokens=kept, **fields
        )
        out = style.dumps(_render(plan, note))
        over = ctx.count(out) - limit
        if over <= 0:
            return out, kept, total
        budget -= over  # items joined or numbers grew differently: shave and retry
    return None


def _plan(value: Container | str, budget: int, job: _Job) -> _Cut | _Text | None:
    """The plan for the whole value: a container cut on its items, a string cut inside,
    or else the notice alone standing for the string."""
    if not isinstance(value, str):
        return _cut(value, budget, 0, job, MAX_DIVE)
    plan = _cut_text(value, budget, job)
    if plan is None and job.tokens(job.probe, 0) <= budget:
        return _Text("", "")
    return plan


def _value(text: str) -> Container | str | None:
    """The array, object or string ``text`` holds, if it is cheap and safe to cut on
    structure."""
    if len(text) > MAX_JSON_CHARS:
        return None
    body = text.lstrip("\ufeff \t\r\n")
    if body[:1] not in ("[", "{", '"'):
        return None
    try:
        value, inexact = load_json(text)
    except (ValueError, RecursionError):
        return None
    if inexact:  # written back, a number would change: cut as text
        return None
    if isinstance(value, str):
        return value or None
    if not isinstance(value, list | dict) or not value:
        return None
    # no deeper than its brackets: most texts are cleared without a walk over every item
    if text.count("[") + text.count("{") > MAX_NESTING and depth_over(value, MAX_NESTING):
        return None
    return value


def _style(text: str, value: Container) -> _Style:
    body = text.lstrip("\ufeff").strip()
    newline = body.find("\n")
    if newline < 0:
        spaced = json.dumps(value, ensure_ascii=False) == body or json.dumps(value) == body
        return _Style(None, ", ", ": ") if spaced else COMPACT
    line = body[newline + 1 :].split("\n", 1)[0]
    lead = line[: len(line) - len(line.lstrip(" \t"))]
    return _Style(lead or "  ", ",", ": ")


def _items(value: Container) -> list[tuple[str | None, object]]:
    if isinstance(value, dict):
        return list(value.items())
    return [(None, v) for v in value]


def _cut(value: Container, budget: int, depth: int, job: _Job, dive: int) -> _Cut | None:
    """The plan for ``value`` (written ``depth`` levels down) in ``budget`` tokens: the
    dominant item cut inside, else whole items, else the edge item cut inside, else the
    notice alone; ``None`` when not even that fits."""
    big = _dominant(value, job.style) if dive > 0 else None
    if big is not None:
        plan = _descend(value, big, True, budget, depth, job, dive)
        if plan is not None:
            return plan
    items = _items(value)
    is_dict = isinstance(value, dict)
    key = NOTICE_KEY
    while is_dict and key in value:
        key += "."
    marker = _Cut(is_dict, [], [], True, key)
    room = budget - job.tokens(_render(marker, job.probe), depth)
    costs: dict[int, int] = {}

    def cost(i: int) -> int:
        if i not in costs:
            costs[i] = job.ctx.count(job.style.piece(*items[i], depth))
        return costs[i]

    heads, tails = _choose(len(items), room, job.mode, cost)
    if heads + tails == len(items):
        return _Cut(is_dict, items, [], False, key)
    if heads + tails:
        return _Cut(is_dict, items[:heads], items[len(items) - tails :], True, key)
    if dive > 0:
        edge = len(items) - 1 if job.mode == "tail" else 0
        plan = _descend(value, edge, False, budget, depth, job, dive)
        if plan is not None:
            return plan
    return marker if room >= 0 else None


def _choose(n: int, room: int, mode: Mode, cost: Callable[[int], int]) -> tuple[int, int]:
    """How many items to keep from the head and from the tail within ``room`` tokens."""

    def take(order: range, space: int) -> tuple[int, int]:
        taken = used = 0
        for i in order:
            c = cost(i)
            if used + c > space:
                break
            taken, used = taken + 1, used + c
        return taken, used

    if mode == "head":
        return take(range(n), room)[0], 0
    if mode == "tail":
        return 0, take(range(n - 1, -1, -1), room)[0]
    heads, used = take(range(n), room - room // 2)
    tails, more = take(range(n - 1, heads - 1, -1), room - used)
    extra, _ = take(range(heads, n - tails), room - used - more)
    return heads + extra, tails


def _dominant(value: Container, style: _Style) -> int | None:
    """The item holding more than half of ``value`` (its written size, keys left out), if
    it can be cut inside. Measured in blocks, a few ``dumps`` for any number of items: an
    item over half of the whole is over half of its block's sum too."""
    values = list(value.values()) if isinstance(value, dict) else value
    total = _span(values, style)
    lo, hi, size = 0, len(values), total
    while hi - lo > 1:
        step = isqrt(hi - lo)  # about sqrt(n) blocks of sqrt(n) items: never the whole
        for start in range(lo, hi, step):
            end = min(start + step, hi)
            size = _span(values[start:end], style)
            if size * 2 > total:
                lo, hi = start, end
                break
        else:
            return None
    if not values or size * 2 <= total or _hollow(values[lo]) is None:
        return None
    return lo


def _span(values: list[object], style: _Style) -> int:
    """The sum of ``len(style.dumps(v))`` over ``values``, from one ``dumps`` of them all:
    the array's text less its brackets, separators and (indented) the line breaks and
    indents around its items, and one indent more on each line inside them."""
    if not values:
        return 0
    text = style.dumps(values)
    n = len(values)
    size = len(text) - 2 - len(style.item_sep) * (n - 1)
    if style.indent is None:
        return size
    lead = len(style.indent)
    return size - (1 + lead) * n - 1 - lead * (text.count("\n") - n - 1)


def _hollow(value: object) -> object:
    """What stands for ``value`` while the rest is measured; ``None`` if it cannot be cut."""
    if isinstance(value, str) and value:
        return ""
    if isinstance(value, list | dict) and value:
        return [] if isinstance(value, list) else {}
    return None


def _descend(
    value: Container,
    index: int,
    siblings: bool,
    budget: int,
    depth: int,
    job: _Job,
    dive: int,
) -> _Cut | None:
    """Cut inside item ``index`` of ``value``, keeping the other items whole (``siblings``)
    or leaving them out."""
    items = _items(value)
    is_dict = isinstance(value, dict)
    key, inner = items[index]
    hollow = _hollow(inner)
    if hollow is None:
        return None
    kept, at = (items, index) if siblings else ([items[index]], 0)
    rest = [*kept[:at], (key, hollow), *kept[at + 1 :]]
    room = budget - job.tokens(_render(_Cut(is_dict, rest, [], False), ""), depth)
    room += job.tokens(hollow, depth + 1)
    plan: object
    if isinstance(inner, str):
        plan = _cut_text(inner, room, job)
    elif isinstance(inner, list | dict) and room > 0:
        if not siblings:  # the others left out: the notice goes inside it, which is cut
            room = min(room, job.tokens(inner, depth + 1) - 1)  # (whole, it said nothing)
        plan = _cut(inner, room, depth + 1, job, dive - 1)
    else:
        plan = None
    if plan is None:
        return None
    return _Cut(is_dict, [*kept[:at], (key, plan), *kept[at + 1 :]], [], False)


def _cut_text(text: str, room: int, job: _Job) -> _Text | None:
    """A string cut like a text (on token boundaries, never inside an escape: the cut is
    made on its characters), the notice inside it."""
    ctx = job.ctx
    room -= ctx.count(json.dumps(job.probe, ensure_ascii=False)) + 2
    keep = room
    for _ in range(_RETRIES):
        if keep <= 0:
            return None
        if job.mode == "head":
            head, tail = cut_head(text, keep, ctx), ""
        elif job.mode == "tail":
            head, tail = "", cut_tail(text, keep, ctx)
        else:
            head, tail = cut_head(text, keep - keep // 2, ctx), cut_tail(text, keep // 2, ctx)
        if not (head or tail):
            return None
        written = _escaped(head, ctx) + _escaped(tail, ctx)
        if written <= room:
            return _Text(head, tail)
        keep = min(keep - written + room, keep * room // written)  # escapes cost more
    return None


def _escaped(text: str, ctx: Context) -> int:
    """Tokens of ``text`` as it is written inside a JSON string."""
    return ctx.count(json.dumps(text, ensure_ascii=False)[1:-1]) if text else 0


def _marked(plan: object) -> bool:
    if isinstance(plan, _Text):
        return True
    if not isinstance(plan, _Cut):
        return False
    return plan.marker or any(_marked(v) for _, v in (*plan.before, *plan.after))


def _render(plan: object, notice: str) -> object:
    """The JSON value a plan writes, with ``notice`` where it left something out."""
    if isinstance(plan, _Text):
        return "\n".join(p for p in (plan.head, notice, plan.tail) if p)
    if not isinstance(plan, _Cut):
        return plan
    items = [(k, _render(v, notice)) for k, v in plan.before]
    if plan.marker:
        items.append((plan.key, notice) if plan.is_dict else (None, {NOTICE_KEY: notice}))
    items += [(k, _render(v, notice)) for k, v in plan.after]
    if plan.is_dict:
        return {str(k): v for k, v in items}
    return [v for _, v in items]


def with_note(text: str, note: str) -> str | None:
    """``text`` (a JSON array or object) with ``note`` added where a cut would put its
    notice, in the original's layout; None when ``text`` is not such JSON."""
    value = _value(text)
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, list):
        return _style(text, value).dumps([*value, {NOTICE_KEY: note}])
    key = NOTICE_KEY
    while key in value:
        key += "."
    return _style(text, value).dumps({**value, key: note})
