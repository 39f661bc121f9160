"""JSON text as ctxwin writes it."""

from __future__ import annotations

import json
import sys
from decimal import Decimal, InvalidOperation

__all__ = [
    "MAX_DEPTH",
    "NOT_JSON",
    "compact_json",
    "depth_over",
    "inexact",
    "long_int",
    "long_int_words",
    "parse_json",
]

MAX_DEPTH = 200
"""How deep a request's data may nest (objects in lists in objects...). Real requests stay
under 20; deeper data is refused as malformed instead of exhausting Python's stack."""


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: object = _NotJson()
"""What :func:`parse_json` returns for text that is not JSON (or nests too deeply)."""


def parse_json(text: str) -> object:
    """The JSON value of ``text``, or :data:`NOT_JSON` (never a RecursionError)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON


def depth_over(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (dicts and lists) nests deeper than ``limit``; iterative, so a
    value of any depth is measured without recursion."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: object = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)  # type: ignore[attr-defined]
    return False


def inexact(literal: str, number: float) -> bool:
    """Whether ``number``, the float of the JSON number ``literal``, is not the number the
    literal wrote (``1e400`` read as infinity, ``3.14159265358979323846`` rounded):
    written back, it would say another number."""
    # 15 significant digits always round-trip: only a longer literal, or one with an
    # exponent (overflow, underflow), can name a number its float is not
    if len(literal) <= 15 and "e" not in literal and "E" not in literal:
        return False
    try:
        return Decimal(literal) != Decimal(repr(number))
    except InvalidOperation:  # an exponent past what Decimal holds (1e-99999999999999999999)
        return True  # far past any float's: its float (0.0, inf) says another number


def compact_json(value: object) -> str:
    """JSON as ctxwin writes it: compact, non-ASCII kept as is, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_WRITABLE_BITS = 2_000
"""Integers of at most this many bits (603 digits) Python always writes as text: the
lowest limit ``sys.set_int_max_str_digits`` takes is 640 digits."""


def long_int(n: int) -> bool:
    """Whether Python refuses to write ``n`` as text (``json.dumps`` of it raises
    ValueError): it has more digits than ``sys.get_int_max_str_digits()`` allows."""
    if n.bit_length() <= _WRITABLE_BITS:
        return False
    try:
        str(n)
    except ValueError:
        return True
    return False


def long_int_words() -> str:
    """What a :func:`long_int` is, as an error says it."""
    return (
        f"an integer of more than {sys.get_int_max_str_digits():,} digits, which Python "
        "does not write as JSON text (sys.set_int_max_str_digits raises the limit)"
    )
