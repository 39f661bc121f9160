"""Where the fast engine (quicktok) and tiktoken may disagree, so that counting routes those
texts to tiktoken and every count equals ``len(tiktoken_encoding.encode_ordinary(text))``
(the same as ``encode(text, disallowed_special=())``).

The engines share the rank files; they differ only in their Unicode character tables.
quicktok's classify the characters assigned in recent Unicode versions (Tolong Siki, Beria
Erfe, Tai Yo, CJK extension J, ``U+088F``...) as letters, marks or numbers; tiktoken's
regex treats them as unassigned. A text with one of them can split into different pieces
(``"\\u088f'l"``: 5 tokens in tiktoken, 4 in quicktok). :data:`DIVERGENT` lists them: every
code point on which the two disagreed in a sweep of all of U+0000..U+10FFFF in 19 short
contexts (``c``, ``c + "'l"``, ``"a" + c + " b"``, ``c * 3``, ``c + "123"``...), for
``o200k_base`` and ``cl100k_base`` (the union; cl100k's is a subset).
``benchmarks/exact_counts.py --ranges`` recomputes it.

Lone surrogates (``"\\udcff"``) cannot be UTF-8 encoded; quicktok refuses them, and tiktoken
counts the text after a UTF-16 round trip (a lone surrogate becomes U+FFFD, a surrogate
pair the character it encodes). Texts holding one go to tiktoken too, so they count as
tiktoken counts them.

The table holds for quicktok's class tables with the SHA-256 below; with any other
(:func:`tables_verified` false) ctxwin does not use the fast engine at all.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from pathlib import Path

__all__ = ["DIVERGENT", "QUICKTOK_TABLES", "diverges", "tables_verified"]

DIVERGENT: tuple[tuple[int, int], ...] = (
    (0x088F, 0x088F),
    (0x0C5C, 0x0C5C),
    (0x0CDC, 0x0CDC),
    (0x1ACF, 0x1ADD),
    (0x1AE0, 0x1AEB),
    (0xA7CE, 0xA7CF),
    (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4),
    (0xA7F1, 0xA7F1),
    (0x10940, 0x10959),
    (0x10EC5, 0x10EC7),
    (0x10EFA, 0x10EFB),
    (0x11B60, 0x11B67),
    (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9),
    (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3),
    (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF),
    (0x18D09, 0x18D1E),
    (0x18D80, 0x18DF2),
    (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6F5),
    (0x1E6FE, 0x1E6FF),
    (0x2B73A, 0x2B73F),
    (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
)
"""Inclusive code point ranges on which quicktok 0.4 and tiktoken split differently."""

QUICKTOK_TABLES = {
    "uniclass.bin": "6039f6f7bd056c0d211d02a907a8ed8f3317bb719fc495b9093f9cccca948809",
    "uniclass_o200k.bin": "8dd93d0b36e25eecc2ac43f4bc99f56fbd360fb01bb144778152fa75a6518d6d",
}
"""quicktok's character class tables (in its ``data`` folder) that :data:`DIVERGENT` was
computed against."""


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        re.escape(chr(a)) + ("-" + re.escape(chr(z)) if z != a else "") for a, z in ranges
    )


_BMP = tuple(r for r in DIVERGENT if r[1] < 0x10000)
_SUPPLEMENTARY = tuple(r for r in DIVERGENT if r[0] >= 0x10000)
_STARTS = [a for a, _ in _SUPPLEMENTARY]
_SURROGATES = "\ud800-\udfff"

# Python's re checks a class of BMP ranges in a few ns a character, but each range above the
# BMP costs more: the scan looks for the BMP ones (and surrogates) and for any character in
# the two spans that hold the supplementary ones (emoji are outside both), which is then
# checked by bisection.
_SPANS = ((0x10940, 0x1E6FF), (0x2B73A, 0x33479))
assert all(any(a <= lo and hi <= z for a, z in _SPANS) for lo, hi in _SUPPLEMENTARY)
_SCAN = re.compile(f"[{_class(_BMP)}{_SURROGATES}{_class(_SPANS)}]")
_EXACT = re.compile(f"[{_class(DIVERGENT)}{_SURROGATES}]")
_HOPS = 8
"""Supplementary characters checked one by one before one exact (slower) scan of the rest."""


def _divergent_supplementary(cp: int) -> bool:
    i = bisect.bisect_right(_STARTS, cp) - 1
    return i >= 0 and cp <= _SUPPLEMENTARY[i][1]


def diverges(text: str) -> bool:
    """Whether ``text`` holds a character the engines may split differently, or a lone
    surrogate. ASCII is never divergent: check ``text.isascii()`` first, it costs nothing."""
    pos = 0
    for _ in range(_HOPS):
        m = _SCAN.search(text, pos)
        if m is None:
            return False
        cp = ord(m.group())
        if cp < 0x10000 or _divergent_supplementary(cp):
            return True
        pos = m.end()
    return _EXACT.search(text, pos) is not None


def tables_verified(data_dir: Path) -> bool:
    """Whether quicktok's class tables in ``data_dir`` are those :data:`DIVERGENT` is for."""
    for name, digest in QUICKTOK_TABLES.items():
        try:
            data = (data_dir / name).read_bytes()
        except OSError:
            return False
        if hashlib.sha256(data).hexdigest() != digest:
            return False
    return True
