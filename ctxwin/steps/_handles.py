"""Recall handles: ``r-`` and hex digits of the SHA-256 of a content, so the same content
has the same handle on every machine."""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "HANDLE_DIGITS",
    "HANDLE_RE",
    "OLD_HANDLE_DIGITS",
    "handle_of",
    "is_handle_of",
    "stored_text",
    "utf8",
]

HANDLE_DIGITS = 16
"""Hex digits of the SHA-256 in a handle: 64 bits, so that among n originals in one store
two share a handle with a chance of about n²/2⁶⁵ (3·10⁻⁶ at ten million)."""
OLD_HANDLE_DIGITS = 12
"""Hex digits of the handles ctxwin wrote before (48 bits: ~n²/2⁴⁹, 16% at ten million).
A placeholder written then may still be in a conversation: its handle is still recalled,
from the key it was kept under."""
HANDLE_RE = re.compile(rf"\br-(?:[0-9a-f]{{{HANDLE_DIGITS}}}|[0-9a-f]{{{OLD_HANDLE_DIGITS}}})\b")
"""A recall handle as it appears in a placeholder or notice (16 hex digits, or 12 from
before)."""


def utf8(text: str) -> bytes:
    """The UTF-8 bytes of ``text``, a lone surrogate (JSON lets one through) kept."""
    return text.encode("utf-8", "surrogatepass")


def handle_of(text: str) -> str:
    """The recall handle of a content: ``r-`` and 16 hex digits of its SHA-256."""
    return "r-" + hashlib.sha256(utf8(text)).hexdigest()[:HANDLE_DIGITS]


def is_handle_of(handle: str, text: str) -> bool:
    """Whether ``handle`` (of either length, see :data:`OLD_HANDLE_DIGITS`) is the handle
    of ``text``: its digits begin the SHA-256 of the text."""
    return hashlib.sha256(utf8(text)).hexdigest().startswith(handle[2:])


def stored_text(handle: str, raw: bytes) -> str | None:
    """The original a store's value for ``handle`` holds, or None when the value is not
    one (not UTF-8, or not the content the handle names: a torn or foreign write)."""
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return text if is_handle_of(handle, text) else None
