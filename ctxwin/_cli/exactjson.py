"""JSON as the command line reads and writes request bodies: strictly, numbers kept.

Python's decoder takes ``NaN``, ``Infinity`` and ``-Infinity``, which are no JSON (strict
parsers and the providers refuse them): :func:`loads` refuses them as invalid JSON at their
place. A number a float cannot hold exactly (``1e400``, which a float reads as infinity;
``48.85661400000000000000001``, which it rounds) is read as the float Python makes of it,
and noted by identity with its text (:data:`Numbers`): :func:`dump_json` writes that float
back as the text it came as. A part of the body no step touched goes out with the numbers
it came with, never ``Infinity`` (no JSON) or a rounded decimal; the library sees plain
floats, as from any other caller.
"""

from __future__ import annotations

import json
import re
import sys

from ctxwin._core.jsontext import inexact

__all__ = ["Numbers", "dump_json", "loads"]


Numbers = dict[int, tuple[float, str]]
"""The floats of one input read from a number a float cannot hold exactly, by ``id``: the
float itself (kept alive, so that no other object takes its id) and the text it was read
from. The library hands on the float objects it is given (``copy.deepcopy`` keeps a float
too): one of these found in the output is that number, wherever it went."""


class _NotJson(Exception):
    """``NaN``, ``Infinity`` or ``-Infinity`` met by the decoder (which says not where)."""


def _constant(name: str) -> object:
    raise _NotJson(name)


_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
"""A JSON string: skipped, so that a word or digits inside one are not taken for a value."""
_CONSTANT = re.compile(_STRING + r"|(-?Infinity|NaN)")
_NUMBER = re.compile(_STRING + r"|(-?\d+)(\.\d+)?([eE][-+]?\d+)?")


def _constant_at(text: str) -> int:
    """Where the first ``NaN``/``Infinity``/``-Infinity`` out of a string is in ``text``
    (valid JSON up to it: the decoder reads from the start and stopped there)."""
    for m in _CONSTANT.finditer(text):
        if m.group(1):
            return m.start()
    return 0


def _long_int_at(text: str, limit: int) -> int:
    """Where the first integer of more than ``limit`` digits is in ``text``."""
    for m in _NUMBER.finditer(text):
        digits = m.group(1)
        if digits and not (m.group(2) or m.group(3)) and len(digits.lstrip("-")) > limit:
            return m.start()
    return 0


def loads(text: str) -> tuple[object, Numbers]:
    """The JSON value of ``text``, read strictly, and its :data:`Numbers`. Raises
    :class:`json.JSONDecodeError` (at its place) for text that is no JSON, ``NaN`` and
    ``Infinity`` included, and for an integer longer than Python reads
    (``sys.get_int_max_str_digits()``); RecursionError for data nested too deeply."""
    numbers: Numbers = {}

    def exact(literal: str) -> float:
        number = float(literal)
        if inexact(literal, number):
            numbers[id(number)] = (number, literal)
        return number

    try:
        return json.loads(text, parse_float=exact, parse_constant=_constant), numbers
    except _NotJson as e:
        raise json.JSONDecodeError(
            f"{e.args[0]} is not a JSON number", text, _constant_at(text)
        ) from None
    except json.JSONDecodeError:
        raise
    except ValueError as e:  # Python's own limit on reading integers
        limit = sys.get_int_max_str_digits()
        if not limit or "integer string conversion" not in str(e):
            raise
        raise json.JSONDecodeError(
            f"an integer of more than {limit:,} digits, which Python does not read "
            "(sys.set_int_max_str_digits raises the limit)",
            text,
            _long_int_at(text, limit),
        ) from None


def _marked(data: object, numbers: Numbers, mark: str) -> tuple[object, list[str]]:
    """A copy of ``data`` with each float of ``numbers`` replaced by the string ``mark``
    and its index in the texts returned with it (iterative: any depth); ``data`` itself is
    left as it is."""
    texts: list[str] = []
    stack: list[tuple[object, dict[str, object] | list[object]]] = []

    def swap(value: object) -> object:
        if type(value) is float:
            known = numbers.get(id(value))
            if known is None or known[0] is not value:
                return value
            texts.append(known[1])
            return f"{mark}{len(texts) - 1}"
        new: dict[str, object] | list[object]
        if isinstance(value, dict):
            new = {}
        elif isinstance(value, (list, tuple)):
            new = []
        else:
            return value
        stack.append((value, new))
        return new

    root = swap(data)
    while stack:
        old, new = stack.pop()
        if isinstance(new, dict):
            for key, value in old.items():  # type: ignore[attr-defined]
                new[key] = swap(value)
        else:
            new.extend([swap(value) for value in old])  # type: ignore[attr-defined]
    return root, texts


def _dumps(data: object, compact: bool) -> str:
    layout: dict[str, object] = {"separators": (",", ":")} if compact else {"indent": 2}
    text = json.dumps(data, ensure_ascii=False, **layout)  # type: ignore[arg-type]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True, **layout)  # type: ignore[arg-type]
    return text


def dump_json(data: object, *, compact: bool = False, numbers: Numbers | None = None) -> str:
    """JSON text, non-ASCII kept as is; text UTF-8 cannot carry (a lone surrogate such as
    ``\\ud800``, which JSON allows as an escape) is written escaped, as it came in; a float
    of ``numbers`` as the text it was read from."""
    plain = _dumps(data, compact)
    if not numbers:
        return plain + "\n"
    mark = "ctxwin-number-"
    while mark in plain:  # then no text but the marks below holds it
        mark += "-"
    marked, texts = _marked(data, numbers, mark)
    if not texts:
        return plain + "\n"
    text = re.sub(
        f'"{re.escape(mark)}([0-9]+)"', lambda m: texts[int(m.group(1))], _dumps(marked, compact)
    )
    return text + "\n"
