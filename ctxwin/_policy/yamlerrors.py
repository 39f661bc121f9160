"""A YAML policy file's errors where an editor shows them: the line and column of the
problem, the file's end when the parser ran off it, and hints for what users often write
(tabs, a tool pattern starting with ``*``, a line break only YAML sees)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
import yaml.composer
import yaml.reader
import yaml.scanner

from ctxwin._exceptions import PolicyError
from ctxwin._policy.yamltext import YamlRefusal

__all__ = ["refuse_odd_breaks", "yaml_error"]


_ODD_BREAKS = re.compile("[\x85\u2028\u2029]")
_ODD_NAMES = {"\x85": "NEXT LINE", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}


def refuse_odd_breaks(text: str, file: str) -> None:
    """A :class:`~ctxwin.PolicyError` at the first U+0085, U+2028 or U+2029 (text pasted
    from a web page), where an editor shows it. YAML counts each as a line break: in a
    comment, what follows it was read as content, and the error named a later line that
    was fine (every line number after it was off by one)."""
    found = _ODD_BREAKS.search(text)
    if found is None:
        return
    lines = re.split("\r\n|[\r\n]", text[: found.start()])
    char = found.group()
    raise PolicyError(
        f"character U+{ord(char):04X} ({_ODD_NAMES[char]}) is a line break to YAML, though "
        "editors show none: replace it with a newline or a space",
        file=file,
        line=len(lines),
        column=len(lines[-1]) + 1,
    )


def yaml_error(e: yaml.YAMLError, text: str, file: str) -> PolicyError:
    if isinstance(e, yaml.reader.ReaderError):
        before = _BREAK.split(text[: e.position])
        char = e.character if isinstance(e.character, int) else 0
        return PolicyError(
            f"character U+{char:04X} is not allowed in YAML",
            file=file,
            line=len(before),
            column=len(before[-1]) + 1,
        )
    spot = _spot(getattr(e, "problem_mark", None), text)
    problem = str(getattr(e, "problem", None) or e)
    if len(problem) > 120:  # PyYAML quotes names (an undefined alias) whole
        problem = problem[:117] + "..."
    if not isinstance(e, YamlRefusal):
        problem = f"invalid YAML: {problem}{_glob_hint(e, text)}"
        if "'\\t'" in problem:
            problem += " (YAML indents with spaces, never tabs)"
        if spot.at_end:
            problem += " at the end of the file" + _opened(e, text)
    return PolicyError(problem, file=file, line=spot.line, column=spot.column)


_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
"""A line break as YAML (and PyYAML's marks) count them."""


@dataclass(frozen=True, slots=True)
class _Spot:
    """Where in a file a YAML error is, 1-based, on a line the file has."""

    line: int | None = None
    column: int | None = None
    at_end: bool = False
    """The parser ran off the end of the file (an unclosed bracket or quote...)."""


def _spot(mark: yaml.Mark | None, text: str) -> _Spot:
    """The line and column of a PyYAML mark. Its lines and columns count from 0, and at the
    end of a file that ends with a line break it stands on the line after it, which the
    file does not have (a 2-line file's unclosed bracket was said to be on line 3): there,
    the end of the file's last line."""
    if mark is None:
        return _Spot()
    if mark.index < len(text):
        return _Spot(mark.line + 1, mark.column + 1)
    lines = _BREAK.split(text)
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the final line break ends the last line; it starts none
    # PyYAML counts no BOM in a column
    return _Spot(len(lines), len(lines[-1].replace("\ufeff", "")) + 1, at_end=True)


def _opened(e: yaml.YAMLError, text: str) -> str:
    """Where what the end of the file left open began (`` (while parsing a flow sequence
    that starts on line 2)``), or ""."""
    context = getattr(e, "context", None)
    start = _spot(getattr(e, "context_mark", None), text)
    if not isinstance(context, str) or start.line is None or start.at_end:
        return ""
    return f" ({context} that starts on line {start.line})"


_ALIAS_WORD = re.compile(r"\*[^\s'\"&:,\[\]{}]*")
"""A glob read as an alias: ``*`` then what a tool pattern holds, up to a ``:``, blank or
flow indicator (``*``, ``*_search``, ``*search*``)."""


def _glob_hint(e: yaml.YAMLError, text: str) -> str:
    """Why a YAML error is likely an unquoted tool glob (``*: ...``, ``tool: *_x``), or "".

    YAML reads a word that starts with ``*`` as an alias: ``*`` alone (or followed by a
    character an alias name cannot hold) is a scanner error, and ``*_search`` an undefined
    alias; the latter only counts where a tool pattern stands (a key, or ``tool:``'s value).
    """
    if isinstance(e, yaml.scanner.ScannerError) and e.context == "while scanning an alias":
        mark = e.context_mark
    elif isinstance(e, yaml.composer.ComposerError) and str(e.problem).startswith(
        "found undefined alias"
    ):
        mark = e.problem_mark
    else:
        return ""
    if mark is None or not text.startswith("*", mark.index):
        return ""
    word = _ALIAS_WORD.match(text, mark.index)
    pattern = word.group() if word else "*"
    line_start = text.rfind("\n", 0, mark.index) + 1
    before = text[line_start : mark.index].strip()
    after = text[mark.index + len(pattern) :].lstrip(" \t")
    is_scan = isinstance(e, yaml.scanner.ScannerError)
    if not (is_scan or after.startswith(":") or before == "tool:"):
        return ""
    return (
        f' (a word starting with * is a YAML alias: write the tool pattern in quotes: "{pattern}")'
    )
