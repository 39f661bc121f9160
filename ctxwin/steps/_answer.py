"""What the recall tool answers: :class:`RecallAnswer`, and the part of an original asked
for (a range of lines, the lines matching a pattern)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxwin.steps._grep import grep_lines

__all__ = ["GREP_NOT_TEXT", "RecallAnswer", "absent", "line_range", "part_of"]


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    """What the recall tool answers: the text, and whether it is an error."""

    text: str
    is_error: bool = False

    def __str__(self) -> str:
        return self.text


GREP_NOT_TEXT = RecallAnswer("recall: grep must be a string (a regular expression)", True)
"""The answer to a ``grep`` that is not a string (a number, a list, bytes: a model may send
any JSON)."""

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


def line_range(lines: object) -> tuple[int, int | None] | str:
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


def absent(lines: object) -> bool:
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
    if not absent(lines):
        span = line_range(lines)
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
