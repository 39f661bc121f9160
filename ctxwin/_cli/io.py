"""What the command line reads and writes: request files, folders, JSONL, stdin; progress.

Every problem with an input is a :class:`CliError` whose text is the one line the user
sees, naming the file and, for JSON, the line and column.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ctxwin._cli.exactjson import Numbers, dump_json, loads
from ctxwin._core.jsontext import MAX_DEPTH
from ctxwin._exceptions import FormatError, PolicyError, PolicyErrors
from ctxwin._report.tables import many

__all__ = [
    "PROGRESS_DELAY",
    "STDIN",
    "CliError",
    "Progress",
    "Request",
    "check_writable",
    "dump_json",
    "expand",
    "format_error",
    "iter_requests",
    "parse_requests",
    "policy_error",
    "policy_error_line",
    "read_requests",
    "read_text",
    "to_stderr",
    "write_text",
]

STDIN = "-"
JSONL_SUFFIXES = (".jsonl", ".ndjson")
REQUEST_SUFFIXES = (".json", *JSONL_SUFFIXES)


class CliError(Exception):
    """A failure the CLI reports as one line on stderr, exiting with ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Request:
    """One request read from the input: its body and where it came from."""

    name: str
    """``file``, ``file:line`` for a line of a JSONL file, or ``<stdin>``."""
    body: object
    jsonl: bool = False
    """Whether it came from JSONL input (output is JSONL too)."""
    numbers: Numbers = field(default_factory=dict)
    """Its numbers a float cannot hold exactly, for :func:`dump_json` to write back as they
    came."""


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


# ------------------------------------------------------------------------------ reading


def expand(paths: Sequence[str]) -> list[str]:
    """Files to read: folders become their ``*.json``/``*.jsonl`` files, recursively
    (hidden ones skipped), in sorted order; ``-`` is stdin."""
    out: list[str] = []
    for raw in paths:
        if raw == STDIN:
            if STDIN in out:  # the second read would find it empty
                raise CliError("'-' is given twice: stdin is read once")
            out.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix.lower() in REQUEST_SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise CliError(f"{raw}: no .json or .jsonl files in this folder")
            out.extend(str(p) for p in found)
        elif not path.exists():
            raise CliError(f"{raw}: no such file or folder")
        else:
            out.append(raw)
    return out


def read_text(path: str, stdin: IO[str] | None = None) -> str:
    """The UTF-8 text of a file or of stdin (a byte-order mark is dropped)."""
    name = display_name(path)
    try:
        if path == STDIN:
            stream = stdin if stdin is not None else sys.stdin
            if stream is None:  # closed (<&-): Python gives None, not a file
                raise CliError(f"{name}: cannot read: stdin is closed")
            buffer = getattr(stream, "buffer", None)
            data: bytes | str = buffer.read() if buffer is not None else stream.read()
        else:
            data = Path(path).read_bytes()
    except IsADirectoryError:
        raise CliError(f"{name}: is a folder, not a request file") from None
    except FileNotFoundError:
        raise CliError(f"{name}: no such file or folder") from None
    except OSError as e:
        raise CliError(f"{name}: cannot read: {e.strerror or e}") from e
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CliError(f"{name}: not UTF-8 text (invalid byte at offset {e.start})") from e


_BREAK = re.compile("\r\n|[\r\n]")
"""A line break in JSON text (the only two of JSON's whitespace characters that break)."""


def _json_error(where: str, e: json.JSONDecodeError) -> CliError:
    """The error of a JSON document at the line and column the file has. At the end of a
    file that ends with a line break (a body cut short), the decoder stands on the line
    after it, which the file does not have: there, the end of the file's last line."""
    if e.pos < len(e.doc):
        before = _BREAK.split(e.doc[: e.pos])  # a CR alone breaks a line too
        return CliError(f"{where}:{len(before)}:{len(before[-1]) + 1}: invalid JSON: {e.msg}")
    lines = _BREAK.split(e.doc)
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the final line break ends the last line; it starts none
    return CliError(
        f"{where}:{len(lines)}:{len(lines[-1]) + 1}: invalid JSON: {e.msg} at the end of the file"
    )


def _jsonl_error(where: str, e: json.JSONDecodeError, line: int, last: bool) -> CliError:
    """The error of line ``line`` of a JSONL file (``e`` is of that line alone)."""
    end = ""
    if e.pos >= len(e.doc):  # the line (a request cut short) ends before its JSON does
        end = " at the end of the file" if last else " at the end of the line"
    return CliError(f"{where}:{line}:{e.pos + 1}: invalid JSON: {e.msg}{end}")


def _loads(where: str, text: str) -> tuple[object, Numbers]:
    """The JSON of ``text`` read strictly, its numbers kept as written (:func:`loads`),
    with JSON nested deeper than Python's decoder can go refused as the file's error (the
    API refuses data nested over MAX_DEPTH the same way), not a RecursionError that would
    end the whole command."""
    try:
        return loads(text)
    except RecursionError:
        raise CliError(f"{where}: JSON nested more than {MAX_DEPTH} levels deep") from None


def parse_requests(path: str, text: str, failed: list[CliError] | None = None) -> list[Request]:
    """The requests in a file's text: one JSON document, or JSONL (one per line) for a
    ``.jsonl`` file, or stdin holding several documents one per line (when its first line
    is one: else the error is the one document's, at its line and column). With ``failed``
    (``--keep-going``), a line of JSONL that is no JSON (the last line of a log still being
    written) is added to it, as ``file:line``, and the other lines are read on."""
    name = display_name(path)
    if not text.strip():
        raise CliError(f"{name}: empty input (no request)")
    whole: json.JSONDecodeError | None = None
    """Why stdin is no one document, when it is read as JSONL instead."""
    if not path.lower().endswith(JSONL_SUFFIXES):
        try:
            body, numbers = _loads(name, text)
            return [Request(name, body, numbers=numbers)]
        except json.JSONDecodeError as e:
            # stdin may carry JSONL: several documents, one per line
            if not (path == STDIN and e.msg == "Extra data" and e.pos > 0):
                raise _json_error(name, e) from e
            whole = e
    out = []
    # JSONL breaks lines at "\n" alone (jsonlines.org): a string may hold U+2028 or U+0085
    lines = text.removesuffix("\n").split("\n")
    for i, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            body, numbers = _loads(f"{name}:{i}", line)
        except json.JSONDecodeError as e:
            if whole is not None:  # its first line is no document: stdin is no JSONL (a
                raise _json_error(name, whole) from whole  # pretty-printed one, and more)
            error = _jsonl_error(name, e, i, last=i == len(lines))
            if failed is None:
                raise error from e
            failed.append(error)
            continue
        except CliError as error:  # nested too deeply
            if failed is None:
                raise
            failed.append(error)
            continue
        whole = None  # a line of JSONL: the lines after it are said as JSONL's
        out.append(Request(f"{name}:{i}", body, jsonl=True, numbers=numbers))
    return out


def read_requests(
    path: str, stdin: IO[str] | None = None, failed: list[CliError] | None = None
) -> list[Request]:
    return parse_requests(path, read_text(path, stdin), failed)


def iter_requests(paths: Sequence[str], progress: Progress | None = None) -> Iterator[Request]:
    """Every request of every file (read one file at a time), advancing ``progress``."""
    files = expand(paths)
    if progress is not None:
        progress.start(len(files))
    for path in files:
        yield from read_requests(path)
        if progress is not None:
            progress.advance(display_name(path))


# ------------------------------------------------------------------------------ errors


def format_error(where: str, e: FormatError) -> CliError:
    """A :class:`FormatError` of a request as one line: file, JSON path, reason (its
    advice to pass ``format=`` given as the option, ``--format``)."""
    at = f"{where}: {e.path}" if e.path else where
    reason = re.sub(
        r"pass format=(?:'([^']*)')?",
        lambda m: "pass --format" + (f" {m.group(1)}" if m.group(1) else ""),
        e.reason,
    )
    reason = re.sub(  # the file holds JSON: its values by their JSON names
        r"^(cannot tell the wire format of this )(\w+)",
        lambda m: m.group(1) + _JSON_NAMES.get(m.group(2), m.group(2)),
        reason,
    )
    return CliError(f"{at}: {reason}")


_JSON_NAMES = {
    "dict": "JSON object",
    "list": "JSON array",
    "str": "JSON string",
    "int": "JSON number",
    "float": "JSON number",
    "bool": "JSON boolean",
    "NoneType": "JSON null",
}


def policy_error_line(e: PolicyError, source: str) -> str:
    """One line for a policy error: ``file:line: key: message``."""
    where = e.file or source
    if e.line is not None:
        where += f":{e.line}"
    reason = e.reason.replace("load_policy(..., follow_symlinks=True)", "--follow-symlinks")
    return f"{where}: {e.key + ': ' if e.key else ''}{reason}"


def policy_error(e: PolicyError, source: str) -> CliError:
    if isinstance(e, PolicyErrors):
        first = policy_error_line(e.errors[0], source)
        more = len(e.errors) - 1
        return CliError(
            f"{first} (and {many(more, 'more error')}; 'ctxwin lint {source}' lists them)"
        )
    return CliError(policy_error_line(e, source))


# ------------------------------------------------------------------------------ writing


def write_text(text: str, out: str | None, stdout: IO[str] | None = None) -> None:
    """Write UTF-8 ``text`` to the file ``out``, or to stdout for ``None`` and ``-``."""
    if out is None or out == STDIN:
        stream = stdout if stdout is not None else sys.stdout
        if stream is None:  # closed (>&-): Python gives None, not a file
            raise CliError("<stdout>: cannot write: stdout is closed")
        buffer = getattr(stream, "buffer", None)
        try:
            if buffer is not None:
                stream.flush()
                buffer.write(text.encode("utf-8", errors="backslashreplace"))
                buffer.flush()
            else:
                stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise CliError(f"<stdout>: cannot write: {e.strerror or e}") from e
        return
    try:
        Path(out).write_bytes(text.encode("utf-8", errors="backslashreplace"))
    except OSError as e:
        raise CliError(f"{out}: cannot write: {e.strerror or e}") from e


def to_stderr(text: str) -> None:
    """Write ``text`` on stderr, unless it is closed (``2>&-``: Python gives None): the
    exit status still says how the command ended."""
    stream = sys.stderr
    if stream is not None:
        stream.write(text)
        stream.flush()


def check_writable(*outputs: str | None) -> None:
    """Refuse, before any work, an output file that cannot be written (a folder, a folder
    that does not exist, no permission): a long replay no longer ends on that error, after
    the other outputs were written."""
    for out in outputs:
        if out is None or out == STDIN:
            continue
        path = Path(out)
        problem = None
        if path.is_dir():
            problem = errno.EISDIR
        elif not path.parent.is_dir():
            problem = errno.ENOENT
        elif not os.access(path if path.exists() else path.parent, os.W_OK):
            problem = errno.EACCES
        if problem is not None:
            raise CliError(f"{out}: cannot write: {os.strerror(problem)}")


# ------------------------------------------------------------------------------ progress

PROGRESS_DELAY = 0.5
"""Seconds before a progress bar appears: short runs never show one."""


class Progress:
    """A one-line progress bar on a terminal's stderr, for runs over several files.

    Drawn only when the stream is a terminal, there is more than one file and the run has
    taken longer than :data:`PROGRESS_DELAY`; erased when done. ``force`` draws it on any
    stream, from the first step.
    """

    def __init__(
        self,
        label: str,
        stream: IO[str] | None = None,
        *,
        enabled: bool = True,
        force: bool = False,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.force = force
        closed = self.stream is None  # 2>&-: Python gives None, not a file
        self.enabled = not closed and (force or (enabled and _isatty(self.stream)))
        self.total = 0
        self.done = 0
        self.began = 0.0
        self.drawn = False
        self.last = 0.0

    def start(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.began = time.monotonic()
        self.enabled = self.enabled and (total > 1 or self.force)

    def advance(self, name: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        early = now - self.began < PROGRESS_DELAY and not self.force
        if early or (now - self.last < 0.1 and self.done < self.total and not self.force):
            return
        self.last = now
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        bar_width = 24
        filled = bar_width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (bar_width - filled)
        head = f"{self.label} [{bar}] {self.done}/{self.total} "
        room = max(columns - len(head), 0)
        if len(name) <= room:
            tail = name
        else:
            tail = "..." + name[len(name) - room + 3 :] if room > 3 else ""
        self.stream.write("\r" + (head + tail).ljust(columns)[:columns])
        self.stream.flush()
        self.drawn = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.drawn:
            columns = shutil.get_terminal_size((80, 24)).columns - 1
            self.stream.write("\r" + " " * columns + "\r")
            self.stream.flush()
            self.drawn = False


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
