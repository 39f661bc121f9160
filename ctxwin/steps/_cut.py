"""Cutting text to a token budget on exact token boundaries (used by cap and summarize).

Cutting never tokenizes more than needed: a 50 MB result costs a few windows of the
budget's size, not 50 MB.
"""

from __future__ import annotations

from typing import Literal

from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import EXACT_COUNT_LIMIT, Context, ResultInfo, text_tokens
from ctxwin.steps._ends import cut_head as _head
from ctxwin.steps._ends import cut_tail as _tail
from ctxwin.steps._jsoncut import JSON_CUT_NOTE, cut_json

__all__ = ["cap_result", "truncate"]


def truncate(
    text: str,
    limit: int,
    mode: Literal["head", "tail", "head_tail"],
    notice: str,
    fields: dict[str, object],
    ctx: Context,
) -> tuple[str, int, int, bool]:
    """``text`` cut to at most ``limit`` tokens, notice included.

    Returns the new text, the tokens it keeps of the original, the original's total and
    whether that total is exact.
    """
    total, exact = text_tokens(text, ctx)
    budget = limit
    for _ in range(4):
        probe = notice.format(
            omitted_tokens=total, total_tokens=total, kept_tokens=budget, **fields
        )
        keep = max(budget - ctx.count(probe) - 2, 0)
        if mode == "head":
            head, tail = _head(text, keep, ctx), ""
        elif mode == "tail":
            head, tail = "", _tail(text, keep, ctx)
        else:
            head, tail = _head(text, keep - keep // 2, ctx), _tail(text, keep // 2, ctx)
        kept = (ctx.count(head) if head else 0) + (ctx.count(tail) if tail else 0)
        note = notice.format(
            omitted_tokens=max(total - kept, 0), total_tokens=total, kept_tokens=kept, **fields
        )
        pieces = [p for p in (head, note, tail) if p]
        out = "\n".join(pieces)
        if ctx.count(out) <= limit or keep == 0:
            return out, kept, total, exact
        budget -= ctx.count(out) - limit  # junctions merged differently: shave and retry
    return note, 0, total, exact


def _estimated(exact: bool) -> str | None:
    return None if exact else f"total estimated (result over {EXACT_COUNT_LIMIT:,} characters)"


def cap_result(
    result: ToolResult,
    info: ResultInfo,
    ctx: Context,
    limit: int,
    mode: Literal["head", "tail", "head_tail"],
    notice: str,
    step: str,
    fallback: str | None = None,
) -> ToolResult:
    text = result.text
    # counted, never judged by length: a character may be several tokens (braille spinner
    # frames are three each in o200k, and a custom counter may count bytes)
    if len(text) <= EXACT_COUNT_LIMIT and ctx.count(text) <= limit:
        return result
    notice, fields = info.notice_fields(notice, ctx)
    structured = cut_json(text, limit, mode, notice, fields, ctx)  # valid JSON stays valid
    new, _kept, total, exact = structured or truncate(text, limit, mode, notice, fields, ctx)
    after = ctx.count(new)
    if after >= total:  # a notice longer than what it would replace: leave the result
        return result
    ctx.add_edit(
        Edit(
            step=step,
            tool=info.tool,
            call_id=info.call_id,
            tokens_before=total,
            tokens_after=after,
            fallback=fallback,
            note=JSON_CUT_NOTE if structured else _estimated(exact),
            message_index=info.message_index,
            chars_before=len(text),
            chars_after=len(new),
        )
    )
    return result.with_text(new)
