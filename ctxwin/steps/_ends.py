"""The start or end of a text within a token budget, on exact token boundaries.

Never tokenizes more than needed: windows of a few times the budget, doubled until they
hold it, so a 50 MB text costs a few windows, not 50 MB.
"""

from __future__ import annotations

from ctxwin.steps._base import Context
from ctxwin.tokens.counters import TokenCounter

__all__ = ["cut_head", "cut_tail"]


def _can_encode(counter: TokenCounter) -> bool:
    return bool(getattr(counter, "can_encode", False))


def cut_head(text: str, n: int, ctx: Context) -> str:
    """The longest start of ``text`` of at most ``n`` tokens, without tokenizing it all."""
    if n <= 0:
        return ""
    inner = ctx.counter.inner
    width = n * 6 + 64
    while True:
        window = text[:width]
        if _can_encode(inner):
            tokens = inner.encode(window)  # type: ignore[attr-defined]
            if len(tokens) > n + 8 or width >= len(text):
                head: str = inner.decode(tokens[:n])  # type: ignore[attr-defined]
                return head
        else:
            if ctx.count(window) > n or width >= len(text):
                return _search(window, n, ctx, from_start=True)
        width *= 2


def cut_tail(text: str, n: int, ctx: Context) -> str:
    """The longest end of ``text`` of at most ``n`` tokens."""
    if n <= 0:
        return ""
    inner = ctx.counter.inner
    width = n * 6 + 64
    while True:
        window = text[-width:] if width < len(text) else text
        if _can_encode(inner):
            tokens = inner.encode(window)  # type: ignore[attr-defined]
            if len(tokens) > n + 8 or width >= len(text):
                tail: str = inner.decode(tokens[-n:])  # type: ignore[attr-defined]
                return tail
        else:
            if ctx.count(window) > n or width >= len(text):
                return _search(window, n, ctx, from_start=False)
        width *= 2


def _search(window: str, n: int, ctx: Context, *, from_start: bool) -> str:
    """Binary search on characters, for counters that cannot encode."""
    lo, hi = 0, len(window)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = window[:mid] if from_start else window[len(window) - mid :]
        if ctx.count(part) <= n:
            lo = mid
        else:
            hi = mid - 1
    return window[:lo] if from_start else window[len(window) - lo :]
