"""Cutting text to a token budget on exact token boundaries (used by cap and summarize).

Cutting never tokenizes more than needed: a 50 MB result is counted once, whole (the
notice and the edit say its true total, and the report finds that count memoized), and cut
by tokenizing a few windows of the budget's size around what it keeps, not 50 MB.
"""

from __future__ import annotations

from typing import Literal

from ctxwin._core.model import Opaque, ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._ends import cut_head as _head
from ctxwin.steps._ends import cut_tail as _tail
from ctxwin.steps._jsoncut import JSON_CUT_NOTE, cut_json
from ctxwin.steps._selected import is_marked

__all__ = ["SHORT_NOTICE", "SHORT_RECALL_NOTICE", "cap_result", "truncate"]

SHORT_NOTICE = "[... {omitted_tokens} of {total_tokens} tokens cut ...]"
"""The notice of a cap too small for the tool's own notice (15 tokens with 7-digit figures,
in o200k and cl100k)."""
SHORT_RECALL_NOTICE = '[... {omitted_tokens} of {total_tokens} tokens cut: recall("{handle}")]'
"""The same with recall on (25 tokens)."""


def truncate(
    text: str,
    limit: int,
    mode: Literal["head", "tail", "head_tail"],
    notice: str,
    fields: dict[str, object],
    ctx: Context,
) -> tuple[str, int, int]:
    """``text`` cut to at most ``limit`` tokens, notice included.

    Returns the new text, the tokens it keeps of the original and the original's total.
    """
    total = ctx.count(text)
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
            return out, kept, total
        budget -= ctx.count(out) - limit  # junctions merged differently: shave and retry
    return note, 0, total


def _cut(
    text: str,
    limit: int,
    mode: Literal["head", "tail", "head_tail"],
    notice: str,
    fields: dict[str, object],
    ctx: Context,
) -> tuple[str, int, str | None]:
    """``text`` cut with ``notice``: the new text, its tokens, the edit's note."""
    structured = cut_json(text, limit, mode, notice, fields, ctx)  # valid JSON stays valid
    new = structured[0] if structured else truncate(text, limit, mode, notice, fields, ctx)[0]
    return new, ctx.count(new), JSON_CUT_NOTE if structured else None


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
    """``result`` cut to ``limit`` tokens, notice included: where the tool's notice alone
    does not fit (a long tool name, the recall note, a counter of bytes), its short form
    (:data:`SHORT_NOTICE`); where not even that fits, the short notice alone, over the
    limit, and the edit's note says so; where that is not shorter than the result (26
    bytes against a cap of 24, under a counter of bytes), the result whole, over the limit,
    and an edit that cuts nothing says so. With a ``fallback`` (a result capped instead of
    summarized), an edit says it even where nothing is cut. Only the text is cut: images
    and files are kept, and where they take the result over ``limit`` the edit says so
    (:func:`_over_by_parts`), one that cuts nothing when the text fits."""
    text = result.text
    # counted, never judged by length: a character may be several tokens (braille spinner
    # frames are three each in o200k, and a custom counter may count bytes)
    total = ctx.count(text)
    if total <= limit:
        why = _over_by_parts(result, total, limit, ctx)
        if fallback is not None or why is not None:  # nothing to cut, but the edit says why
            _kept(result, info, ctx, step, total, fallback, why)
        return result
    notice, fields = info.notice_fields(notice, ctx)
    new, after, note = _cut(text, limit, mode, notice, fields, ctx)
    if after > limit:  # the notice alone does not fit: its short form
        short = SHORT_RECALL_NOTICE if info.handle else SHORT_NOTICE
        if is_marked(text, (short,), (), info.tool, info.call_id or ""):
            if fallback is not None:  # the short notice alone already, as the cap wrote it
                _kept(result, info, ctx, step, total, fallback, None)
            return result
        shorter = _cut(text, limit, mode, short, fields, ctx)
        if shorter[1] < after:
            new, after, note = shorter
        if after > limit:
            note = _joined(note, f"max_tokens {limit:,} is below the notice")
    if after >= total:  # a notice longer than what it would replace: the result, said
        why = f"max_tokens {limit:,} is below the notice: result kept whole"
        why = _joined(why, _over_by_parts(result, total, limit, ctx))
        _kept(result, info, ctx, step, total, fallback, why)
        return result
    note = _joined(note, _over_by_parts(result, after, limit, ctx))
    _edit(info, ctx, step, (text, total), (new, after), fallback, note)
    return result.with_text(new)


def _kept(
    result: ToolResult,
    info: ResultInfo,
    ctx: Context,
    step: str,
    tokens: int,
    fallback: str | None,
    note: str | None,
) -> None:
    """The edit of a result the cap leaves as it is (``tokens`` its text's), saying why."""
    _edit(info, ctx, step, (result.text, tokens), (result.text, tokens), fallback, note)


def _edit(
    info: ResultInfo,
    ctx: Context,
    step: str,
    before: tuple[str, int],
    after: tuple[str, int],
    fallback: str | None,
    note: str | None,
) -> None:
    """The cap's edit of a result, from ``before`` to ``after`` (each a text, its tokens)."""
    ctx.add_edit(
        Edit(
            step=step,
            tool=info.tool,
            call_id=info.call_id,
            tokens_before=before[1],
            tokens_after=after[1],
            fallback=fallback,
            note=note,
            message_index=info.message_index,
            chars_before=len(before[0]),
            chars_after=len(after[0]),
        )
    )


def _joined(note: str | None, more: str | None) -> str | None:
    """An edit's ``note`` with ``more`` said after it."""
    return "; ".join(filter(None, (note, more))) or None


def _over_by_parts(result: ToolResult, text: int, limit: int, ctx: Context) -> str | None:
    """What the edit says of a result whose media (images, documents, files), which the
    cap keeps, take it over ``limit`` with its text of ``text`` tokens: their tokens as
    the report counts them (None: no media, or within the cap). Other parts that are not
    text (a shell output's outcome, a search result) are the result's own structure: not
    said apart."""
    media = [p for p in result.content if isinstance(p, Opaque) and p.category == "media"]
    if not media:
        return None
    kept = sum(ctx.meter.opaque(p) for p in media)
    if text + kept <= limit:
        return None
    return (
        f"result over max_tokens {limit:,} because of its images and files ({kept:,} tokens), kept"
    )
