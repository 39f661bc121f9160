"""The command line the trace converters share (``from_trajectories.py``,
``from_codex_rollouts.py``, ``from_openhands_events.py``, ``from_claude_sessions.py``): every
file under SRC matching a pattern becomes one request body in OUT (or several, one per
conversation it holds); a file that cannot be converted is named on stderr and skipped."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["convert_all", "convert_each", "json_lines"]


def convert_all(
    argv: list[str] | None,
    usage: str,
    pattern: str,
    convert: Callable[[Path], dict[str, Any]],
    name: Callable[[Path], str],
) -> int:
    """Convert every ``pattern`` file under ``argv``'s SRC (recursively) into
    ``OUT/name(path)``; the exit status (2: not SRC OUT)."""
    return convert_each(argv, usage, pattern, lambda path: [(name(path), convert(path))])


def convert_each(
    argv: list[str] | None,
    usage: str,
    pattern: str,
    convert: Callable[[Path], list[tuple[str, dict[str, Any]]]],
) -> int:
    """Convert every ``pattern`` file under ``argv``'s SRC (recursively) into the
    ``OUT/<name>`` bodies ``convert`` gives for it; the exit status (2: not SRC OUT)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(usage, file=sys.stderr)
        return 2
    src, out = Path(args[0]), Path(args[1])
    out.mkdir(parents=True, exist_ok=True)
    done = skipped = 0
    for path in sorted(src.rglob(pattern)):
        try:
            bodies = convert(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
            skipped += 1
            continue
        for name, body in bodies:
            (out / name).write_text(json.dumps(body), encoding="utf-8")
            done += 1
    print(f"{done} requests written to {out}" + (f", {skipped} skipped" if skipped else ""))
    return 0


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    """The objects of a JSON-lines log, blank lines and non-objects left out (a ValueError
    naming a line that is not JSON)."""
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {n}: not JSON ({exc})") from None
        if isinstance(record, dict):
            records.append(record)
    return records
