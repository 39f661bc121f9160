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

Each line is matched alone, its ``\n`` kept. Searched so, a line at a time (a few µs each),
two million lines ran out of the deadline for a literal: a pattern that cannot match a
``\n`` is searched in the whole text at once (:func:`_line_local`), and another, where it
needs some text in every match, only in the lines holding that text (:func:`_needed`).
"""

from __future__ import annotations

import importlib
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GREP_CONTEXT",
    "GREP_EXPANSION",
    "GREP_LINE_CHARS",
    "GREP_LINE_SHOWN",
    "GREP_SECONDS",
    "grep_lines",
    "not_a_pattern",
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
_NEWLINE = ord("\n")
_COUNTS = re.compile(r"\\.|\{[0-9]*(?:,[0-9]*)?\}")
"""A pattern's escapes and counted repeats: what is left of it holds no ``{`` unless
``re`` reads one as text, which ``regex`` may read otherwise (``{e<=1}``: fuzzy matching)."""
_CATEGORIES = {
    "CATEGORY_DIGIT": False,
    "CATEGORY_WORD": False,
    "CATEGORY_NOT_SPACE": False,
    "CATEGORY_SPACE": True,
    "CATEGORY_NOT_DIGIT": True,
    "CATEGORY_NOT_WORD": True,
}
"""Whether a class (``\\d``, ``\\w``, ...) holds ``\\n``."""
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
    (without ``regex``), or that takes over :data:`GREP_SECONDS` is an error answer.

    Each line is matched alone, its ``\\n`` kept: a pattern never matches across lines, and
    ``$``, ``\\Z`` and lookarounds see the line's end. So that a large original is not
    searched a line at a time, the text is searched whole where that finds the same lines
    (:func:`_line_local`), or only its lines holding a text every match needs are."""
    shown = f"{grep!r:.60}"
    search = _prepared(grep)
    if isinstance(search, str):
        return (f"recall: grep {shown} {search}", True)
    deadline = time.monotonic() + GREP_SECONDS
    try:
        hits = [f"{first + i}:{text}" for i, text in _matching(chosen, search, deadline)]
    except TimeoutError:
        return (
            f"recall: grep {shown} took over {GREP_SECONDS:g}s on {handle}: use a simpler "
            "pattern, or lines to search fewer",
            True,
        )
    if not hits:
        return f"recall: no line of {handle} matches {shown}", False
    return "\n".join(hits), False


def not_a_pattern(grep: str) -> str | None:
    """Why ``grep`` is not a regular expression (``re``'s error), or ``None``: the one
    verdict of the recall and of ``ctxwin recall``'s exit status. Warnings are not let out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(grep)
        except (re.error, RecursionError, OverflowError, ValueError) as e:  # ValueError: a
            # count of over 4,300 digits, which int() refuses
            return str(e)
    return None


@dataclass(frozen=True, slots=True)
class _Search:
    """How a grep searches. ``find(line, deadline)``: the matches in one line. ``seek``,
    given the whole text: ``(pos, deadline)`` to where, at ``pos`` or after, the first
    line that may match has a match or a text every match needs (``None``: no more); no
    ``seek``: every line is searched. ``sure``: every line ``seek`` finds matches."""

    find: Callable[[str, float], Iterator[Any]]
    seek: Callable[[str], Callable[[int, float], int | None]] | None = None
    sure: bool = False


def _prepared(grep: str) -> _Search | str:
    """How ``grep`` is searched, or why it is not (the answer's end)."""
    with warnings.catch_warnings(record=True) as warned:  # re's FutureWarning of
        warnings.simplefilter("always")  # [[:alpha:]] ("Possible nested set"): an error
        # under -W error, out of recall; and a sign that regex reads it otherwise
        if (wrong := not_a_pattern(grep)) is not None:
            return f"is not a regular expression: {wrong}"
        compiled, parsed = re.compile(grep), _parsed(grep)
        if _laid_out(grep) > GREP_EXPANSION:  # before regex compiles: it would lay them out
            return f"is refused: {_EXPANDS}"
        # where re warns or reads a brace as text (regex: fuzzy matching), regex may read
        # the pattern otherwise than re's parser does: no search that relies on the parse
        plain = parsed is not None and not warned and "{" not in _COUNTS.sub("", grep)
        search = _bounded_find(grep, local=plain and _line_local(parsed))
        if search is None and _nests(grep):  # no deadline stops re: may it backtrack?
            return f"is refused: {_NESTED}"
    if search is None:
        search = _Search(lambda line, _deadline: compiled.finditer(line, 0, GREP_LINE_CHARS))
    if search.seek is None and plain:
        needed = _needed(parsed, ignore_case=bool(parsed.state.flags & re.IGNORECASE))
        if needed:
            return _Search(search.find, _finder(needed))
    return search


def _matching(chosen: list[str], search: _Search, deadline: float) -> Iterator[tuple[int, str]]:
    """The index in ``chosen`` of each line that matches, and the line as shown."""
    lines: Iterator[tuple[int, str]] = enumerate(chosen)
    if search.seek is not None:
        lines = _candidates("".join(chosen), search.seek, deadline)
    for i, line in lines:
        text = line.rstrip("\n").rstrip("\r")
        if search.sure and len(text) <= GREP_LINE_SHOWN:
            yield i, text
            continue
        found = search.find(line, deadline)
        match = next(found, None)
        if match is None:
            continue
        if len(text) > GREP_LINE_SHOWN:
            text = _excerpts(text, match, found, deadline)
        yield i, text


def _candidates(
    text: str, seek: Callable[[str], Callable[[int, float], int | None]], deadline: float
) -> Iterator[tuple[int, str]]:
    """The index and the text (``\\n`` kept) of each line of ``text`` that ``seek`` finds,
    counting line ends as it goes."""
    seeking = seek(text)
    pos = index = counted = 0
    while (at := seeking(pos, deadline)) is not None:
        index += text.count("\n", counted, at)
        counted = at
        start = text.rfind("\n", 0, at) + 1
        pos = text.find("\n", at) + 1 or len(text)
        yield index, text[start:pos]


def _finder(needed: list[str]) -> Callable[[str], Callable[[int, float], int | None]]:
    """``seek`` of the lines holding one of the texts ``needed`` (each found once past
    where the last search of it ended, not once a line)."""

    def seek(text: str) -> Callable[[int, float], int | None]:
        ahead = dict.fromkeys(needed, -1)  # where each was found last; len(text): not again

        def seeking(pos: int, _deadline: float) -> int | None:
            for each, at in ahead.items():
                if at < pos:
                    found = text.find(each, pos)
                    ahead[each] = len(text) if found < 0 else found
            nearest = min(ahead.values())
            return None if nearest >= len(text) else nearest

        return seeking

    return seek


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


def _bounded_find(grep: str, *, local: bool) -> _Search | None:
    """The search of ``grep`` through ``regex`` (``re``'s syntax), stopped with a
    TimeoutError at the deadline; ``None`` where ``regex`` is missing (or older than
    2022.6.2, without ``cache_pattern``) or reads the pattern otherwise than ``re``.
    ``local`` (:func:`_line_local`): compiled multiline, it searches the whole text at once.
    The compiled pattern is not kept in ``regex``'s cache: 500 of them, each up to
    :data:`GREP_EXPANSION` items laid out, would hold gigabytes."""
    try:
        engine: Any = importlib.import_module("regex")
        flags = engine.VERSION0 | (re.MULTILINE if local else 0)  # regex's flags are re's
        pattern = engine.compile(grep, flags, cache_pattern=False)
    except Exception:  # no regex, or a pattern only re reads as it is (regex.error and kin)
        return None

    def left(deadline: float) -> float:
        if (seconds := deadline - time.monotonic()) <= 0:
            raise TimeoutError
        return seconds

    def find(line: str, deadline: float) -> Iterator[Any]:
        return iter(pattern.finditer(line, timeout=left(deadline)))

    def seek(text: str) -> Callable[[int, float], int | None]:
        def seeking(pos: int, deadline: float) -> int | None:
            match = pattern.search(text, pos, timeout=left(deadline))
            return None if match is None else int(match.start())

        return seeking

    return _Search(find, seek, sure=True) if local else _Search(find)


def _parsed(grep: str) -> Any:
    """``grep`` read by Python's own parser of regular expressions (``None``: the parser
    is not found, or fails where ``re`` compiled it, from its cache, at another depth)."""
    try:
        parser: Any = importlib.import_module(
            "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
        )
        return parser.parse(grep)
    except Exception:  # ImportError, RecursionError: no search that relies on the parse
        return None


def _line_local(parsed: Any) -> bool:
    """Whether the pattern matches the same lines searched in the whole text (multiline)
    as in each line alone: no part of it matches a ``\\n`` (so no match reaches past its
    line's end, where, alone, the line ends), none is ``\\A``, ``(?-m:...)`` is not used,
    and every match holds a character (so none starts after a line's ``\\n``). In a line
    alone ``^`` and ``$`` match where multiline they do, in the line, and lookarounds,
    ``\\b``, ``\\B``, ``\\Z`` see the same characters up to its ``\\n``."""
    try:
        return parsed.getwidth()[0] >= 1 and _no_newline(
            parsed, dotall=bool(parsed.state.flags & re.DOTALL)
        )
    except Exception:  # the parser's tree changed: search line by line
        return False


def _no_newline(items: Any, *, dotall: bool) -> bool:
    """Whether no part of the parsed ``items`` can match a ``\\n`` or ``\\A``."""
    for op, av in items:
        name = op.name
        if name == "SUBPATTERN":
            _, add, remove, body = av
            inner = (dotall or bool(add & re.DOTALL)) and not remove & re.DOTALL
            ok = not remove & re.MULTILINE and _no_newline(body, dotall=inner)
        elif name in _REPEATS:
            ok = _no_newline(av[2], dotall=dotall)
        elif name in ("BRANCH", "ATOMIC_GROUP", "ASSERT", "ASSERT_NOT", "GROUPREF_EXISTS"):
            ok = all(_no_newline(body, dotall=dotall) for body in _bodies(name, av))
        else:
            ok = _item_no_newline(name, av, dotall=dotall)
        if not ok:
            return False
    return True


def _item_no_newline(name: str, av: Any, *, dotall: bool) -> bool:
    """Whether one item of a parsed pattern, not a group nor a repeat, cannot match ``\\n``
    (and is not ``\\A``); an item not known here is taken to."""
    if name == "LITERAL":
        return bool(av != _NEWLINE)
    if name == "NOT_LITERAL":
        return bool(av == _NEWLINE)
    if name == "ANY":
        return not dotall
    if name == "IN":
        negated = any(op.name == "NEGATE" for op, _ in av)
        holds = [_holds_newline(op.name, a) for op, a in av if op.name != "NEGATE"]
        return any(h is True for h in holds) if negated else all(h is False for h in holds)
    if name == "AT":
        return bool(av.name != "AT_BEGINNING_STRING")
    return name == "GROUPREF"  # what a group matched: no \n either


def _holds_newline(name: str, av: Any) -> bool | None:
    """Whether a member of a set holds ``\\n`` (``None``: not known)."""
    if name == "LITERAL":
        return bool(av == _NEWLINE)
    if name == "RANGE":
        return bool(av[0] <= _NEWLINE <= av[1])
    if name == "CATEGORY":
        return _CATEGORIES.get(av.name)
    return None


def _needed(items: Any, *, ignore_case: bool) -> list[str]:
    """Texts of which every match of the parsed ``items`` holds one (``[]``: none known):
    the longest run of characters it must match, or one run of each alternative. A case
    ignored, none (a letter may be matched by others)."""
    if ignore_case:
        return []
    best: list[str] = []
    run: list[str] = []
    for op, av in [*items, (None, None)]:  # (None, None): the end, which ends a run
        name = getattr(op, "name", "")
        if name == "LITERAL" and av != _NEWLINE:
            run.append(chr(av))
            continue
        options = [["".join(run)]] if run else []
        run = []
        if name == "SUBPATTERN":
            options.append(_needed(av[3], ignore_case=bool(av[1] & re.IGNORECASE)))
        elif name in _REPEATS and av[0] >= 1:
            options.append(_needed(av[2], ignore_case=False))
        elif name == "ATOMIC_GROUP":
            options.append(_needed(av, ignore_case=False))
        elif name == "BRANCH":
            each = [_needed(body, ignore_case=False) for body in av[1]]
            options.append([] if not all(each) else [t for texts in each for t in texts])
        for option in options:
            if option and (not best or min(map(len, option)) > min(map(len, best))):
                best = option
    return best


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
