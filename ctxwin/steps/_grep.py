"""The recall tool's ``grep``: the lines of an original that match a pattern the model wrote.

A matching line longer than :data:`GREP_LINE_SHOWN` characters (one-line JSON, a minified
file) is shown around its matches only, :data:`GREP_CONTEXT` characters each side, with
``…`` where it is cut: the whole line would be cut again by the recall tool's own cap, most
likely where the match is.

The pattern comes from the model, so its search is bounded: matched through the ``regex``
package (``re``'s syntax; tiktoken depends on it), which stops a search at a deadline, and
answered with an error after :data:`GREP_SECONDS`. Where ``regex`` cannot run it, Python's
``re`` searches the first :data:`GREP_LINE_CHARS` characters of each line, and a pattern
whose repeats nest (which can backtrack for minutes on a short line) is refused. ``regex``
lays out counted repeats when it compiles, before any deadline runs, so a pattern whose
counts multiply past :data:`GREP_EXPANSION` is refused first, either way. The warnings
``re`` gives of a pattern (``[[:alpha:]]``: "Possible nested set") are not let out: under
warnings as errors (pytest's ``filterwarnings = error``) they broke the recall.
"""

from __future__ import annotations

import importlib
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "GREP_CONTEXT",
    "GREP_EXPANSION",
    "GREP_LINE_CHARS",
    "GREP_LINE_SHOWN",
    "GREP_SECONDS",
    "grep_lines",
]


GREP_SECONDS = 2.0
"""How long one grep may search (matching through the ``regex`` package, which can stop a
search; tiktoken depends on it)."""
GREP_LINE_CHARS = 2_000
"""Without ``regex`` (Python's ``re`` cannot stop a search): the characters of a line that
are searched, so that a pattern's backtracking stays bounded."""
GREP_LINE_SHOWN = 600
"""A matching line longer than this (characters) is shown around its matches only."""
GREP_CONTEXT = 150
"""Characters shown each side of a match in a long line."""
GREP_MATCHES = 20
"""The most matches shown of one long line (its first)."""
GREP_EXPANSION = 100_000
"""The most items a grep's pattern may lay out: each item (a character, a set, a group)
once for every time the repeats around it must match it at least (``a{1000}`` 1,001 items,
``(?:a{1000}){1000}`` about a million). ``regex`` lays them out when it compiles, some 260
bytes each (``(?:a{1000}){1000}``: 260 MB in 0.3 s; ``(?:a{65535}){250}``: 4.9 GB), before
any deadline can run; ``a{0,1000000}`` (1 item) or ``a+`` (2) next to nothing."""
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_NESTED = (
    "a repeated group in it holds another repeat (*, +, ?, {m,n}) or an alternative (|), "
    "which can take exponential time: write it without, e.g. a+ for (a+)+, (?:foo|bar) for "
    "(foo|bar)+"
)
_EXPANDS = (
    f"its counted repeats ask for over {GREP_EXPANSION:,} copies of what they repeat (counts "
    "multiply when nested: (?:a{1000}){1000} is a million), which takes gigabytes to "
    "compile: write smaller counts, or + and * where any length will do"
)


def grep_lines(chosen: list[str], first: int, handle: str, grep: str) -> tuple[str, bool]:
    """The lines of ``chosen`` matching ``grep`` (as ``N:line``); a pattern that is not one,
    whose counted repeats lay out over :data:`GREP_EXPANSION` items, that nests repeats
    (without ``regex``), or that takes over :data:`GREP_SECONDS` is an error answer."""
    shown = f"{grep!r:.60}"
    with warnings.catch_warnings():  # re's FutureWarning of [[:alpha:]] ("Possible nested
        warnings.simplefilter("ignore")  # set"): an error under -W error, out of recall
        try:
            compiled = re.compile(grep)
        except (re.error, RecursionError, OverflowError, ValueError) as e:  # ValueError: a
            # count of over 4,300 digits, which int() refuses
            return (f"recall: grep {shown} is not a regular expression: {e}", True)
        if _laid_out(grep) > GREP_EXPANSION:  # before regex compiles: it would lay them out
            return (f"recall: grep {shown} is refused: {_EXPANDS}", True)
        find = _bounded_find(grep, compiled)
        if find is None and _nests(grep):  # no deadline stops re: may it backtrack?
            return (f"recall: grep {shown} is refused: {_NESTED}", True)
    if find is None:
        find = lambda line, _deadline: compiled.finditer(line, 0, GREP_LINE_CHARS)  # noqa: E731
    deadline = time.monotonic() + GREP_SECONDS
    hits = []
    try:
        for i, line in enumerate(chosen):
            found = find(line, deadline)
            match = next(found, None)
            if match is None:
                continue
            text = line.rstrip("\n").rstrip("\r")
            if len(text) > GREP_LINE_SHOWN:
                text = _excerpts(text, match, found, deadline)
            hits.append(f"{first + i}:{text}")
    except TimeoutError:
        return (
            f"recall: grep {shown} took over {GREP_SECONDS:g}s on {handle}: use a simpler "
            "pattern, or lines to search fewer",
            True,
        )
    if not hits:
        return f"recall: no line of {handle} matches {shown}", False
    return "\n".join(hits), False


def _excerpts(text: str, match: Any, more: Iterator[Any], deadline: float) -> str:
    """A long line shown around its first :data:`GREP_MATCHES` matches (``match`` the
    first, ``more`` the others): :data:`GREP_CONTEXT` characters each side, windows that
    touch merged, ``…`` where the line is cut."""
    windows: list[list[int]] = []
    for n, m in enumerate(_chain(match, more, deadline)):
        if n == GREP_MATCHES:
            break
        start, end = max(m.start() - GREP_CONTEXT, 0), min(m.end() + GREP_CONTEXT, len(text))
        if windows and start <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    out = "…".join(text[a:b] for a, b in windows)
    return ("…" if windows[0][0] > 0 else "") + out + ("…" if windows[-1][1] < len(text) else "")


def _chain(match: Any, more: Iterator[Any], deadline: float) -> Iterator[Any]:
    yield match
    for m in more:
        if time.monotonic() > deadline:
            raise TimeoutError
        yield m


def _bounded_find(
    grep: str, compiled: re.Pattern[str]
) -> Callable[[str, float], Iterator[Any]] | None:
    """``find(line, deadline)``: the matches in a line, through ``regex`` (``re``'s
    syntax), stopped with a TimeoutError at the deadline; ``None`` where ``regex`` is
    missing (or older than 2022.6.2, without ``cache_pattern``) or reads the pattern
    otherwise than ``re``. The compiled pattern is not kept in ``regex``'s cache: 500 of
    them, each up to :data:`GREP_EXPANSION` items laid out, would hold gigabytes."""
    try:
        engine: Any = importlib.import_module("regex")
        pattern = engine.compile(grep, engine.VERSION0, cache_pattern=False)
    except Exception:  # no regex, or a pattern only re reads as it is (regex.error and kin)
        return None

    def find(line: str, deadline: float) -> Iterator[Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return iter(pattern.finditer(line, timeout=left))

    return find


def _laid_out(grep: str) -> int:
    """How many items ``regex`` lays out compiling ``grep`` (:data:`GREP_EXPANSION`), read
    with Python's own parser (counted up to just past the limit); or, no parser to import,
    an upper bound from the text alone: its length times every count it writes."""
    try:
        parser: Any = importlib.import_module(
            "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
        )
        return _items(parser.parse(grep), 1)
    except Exception:  # the parser moved or its tree changed: the text alone
        total = len(grep)
        for count in re.findall(r"\{\s*([0-9]{1,18})", grep):  # a longer count: over anyway
            total *= max(int(count), 1)
            if total > GREP_EXPANSION:
                break
        return total


def _items(items: Any, times: int) -> int:
    """The items of the parsed ``items``, each ``times`` (the product of the minimum
    counts of the repeats around them), stopping once past :data:`GREP_EXPANSION`."""
    total = 0
    for op, av in items:
        total += times
        name = getattr(op, "name", str(op))
        bodies = [(av[2], times * av[0])] if name in _REPEATS else []
        bodies += [(body, times) for body in _bodies(name, av)]
        for body, n in bodies:
            if total > GREP_EXPANSION:
                break
            total += _items(body, n) if n else 0
        if total > GREP_EXPANSION:
            break
    return total


def _nests(grep: str) -> bool:
    """Whether a repeat of ``grep`` holds another repeat that can vary (``*``, ``+``, ``?``,
    ``{m,n}``) or an alternative: read with Python's own parser of regular expressions, or
    (no parser to import) conservatively: a repeated group in a pattern with another
    quantifier or ``|``."""
    try:
        parser: Any = importlib.import_module(
            "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
        )
        return _nested_in(parser.parse(grep), inside=False)
    except Exception:  # the parser moved or its tree changed: the text alone
        groups = len(re.findall(r"\)[*+?{]", grep))
        return groups > 0 and len(re.findall(r"[*+?{|]", grep)) > groups


def _nested_in(items: Any, *, inside: bool) -> bool:
    """Whether the parsed ``items`` nest repeats (``inside``: they are in a repeat)."""
    for op, av in items:
        name = getattr(op, "name", str(op))
        if name in _REPEATS:
            low, high, body = av
            if (inside and low != high) or _nested_in(body, inside=inside or high > 1):
                return True
        elif (name == "BRANCH" and inside) or any(
            _nested_in(body, inside=inside) for body in _bodies(name, av)
        ):
            return True
    return False


def _bodies(name: str, av: Any) -> list[Any]:
    """The parsed patterns an item holds (a group's, an alternative's, a lookaround's)."""
    if name == "BRANCH":
        return list(av[1])
    if name == "ATOMIC_GROUP":
        return [av]
    if name in ("SUBPATTERN", "ASSERT", "ASSERT_NOT"):
        return [av[-1]]
    if name == "GROUPREF_EXISTS":
        return [b for b in av[1:] if b is not None]
    return []
