"""Summarization through the user's model callback, memoized, with timeouts and fallbacks.

The summarizer is ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str``,
sync or async. ctxwin calls it for results over ``summarize.over_tokens`` and memoizes the
summary by content (text, tool, budget, instructions) for the policy's lifetime, so a
result is summarized once and reads the same in every later request. If the callback
raises, times out, returns nothing or returns more than 1.1 x ``max_tokens`` (counted with
the request's counter, the model's own under ``model_counters``), the result is capped
instead (at the tool's ``max_tokens``, else ``summarize.max_tokens``) and the report says
why; that outcome is memoized too (no retry storm, and the request prefix stays
stable). A summary that, its header included (and, with recall on, the recall note the
request sends after it), is not shorter than the result is refused the same way
(``summarizer_not_shorter``), and so, without a summarizer, is every result over
``over_tokens`` (``summarizer_missing``).

What the step wrote itself passes again untouched, with no call and no edit, so a policy
applied to its own output edits nothing: a summary (it starts with this tool's
``SUMMARY_HEADER``, whose count is above the text's own) and a result capped instead (it
holds the tool's notice where the cap puts it, and the cap leaves it as it is).
"""

from __future__ import annotations

import functools
import re

from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin._policy.sections import MIN_CAP
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._cut import SHORT_NOTICE, SHORT_RECALL_NOTICE, cap_result
from ctxwin.steps._jsoncut import MAX_JSON_CHARS, load_json
from ctxwin.steps._placeholder import placeholder_templates
from ctxwin.steps._selected import (
    as_sent,
    cap_notices,
    is_marked,
    json_marked,
    line_marked,
    without_note,
)
from ctxwin.steps._summaries import AsyncSummarizer, Summarizer, SummarizerLike, SummaryRequest

__all__ = [
    "NO_SUMMARIZER",
    "SUMMARY_HEADER",
    "AsyncSummarizer",
    "Summarize",
    "Summarizer",
    "SummarizerLike",
]

SUMMARY_HEADER = "[summary of {tool} output ({tokens} tokens)]\n"


NO_SUMMARIZER = "summarizer_missing: none was passed to the policy"
"""The ``fallback`` of a result a summarize rule asked to summarize, without a summarizer."""


class Summarize:
    """Summarize results over ``summarize.over_tokens`` through the policy's summarizer.

    Where no summary can be had (no summarizer passed to the policy, or the summarizer
    failed) the result is capped at the tool's ``max_tokens``, else at
    ``summarize.max_tokens``, and the edit's ``fallback`` says why; so is a result whose
    summary, header (and recall note) included, is not shorter than the result. Errors are
    never summarized: for a tool without ``max_tokens`` of its own, one over ``over_tokens``
    is capped there, :data:`~ctxwin._policy.sections.MIN_CAP` at least (it was sent whole,
    however long: 52k tokens of a traceback).

    What this step wrote (a summary, a result capped instead) and a placeholder the window
    wrote for the call pass through untouched, so a policy applied to its own output
    edits nothing.
    """

    name = "summarize"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        rules = info.rules.rules if info.rules is not None else None
        cfg = rules.summarize if rules is not None else None
        if cfg is None:
            return result
        assert rules is not None
        if result.is_error:  # kept as it is, but not past where a summary would start
            if rules.max_tokens is not None:  # the cap step's, next
                return result
            limit = max(cfg.over_tokens, MIN_CAP)  # room for the notice and some of it
            return cap_result(result, info, ctx, limit, rules.truncate, rules.notice, "cap")
        text = result.text
        tokens = ctx.count(text)  # counted: a character may be several tokens
        if tokens <= cfg.over_tokens:
            return result
        if _summarized(text, tokens, info, ctx) or _capped(text, tokens, info, ctx):
            return result  # written by this step: a policy applied to its output edits nothing
        templates = placeholder_templates(rules.placeholder, ctx)
        if is_marked(text, templates, (), info.tool, info.call_id or ""):
            return result  # cleared by the window: the same
        if ctx.summaries.summarizer is None:
            return _fall_back(result, info, ctx, NO_SUMMARIZER)
        outcome = ctx.summaries.lookup(SummaryRequest(text, info.tool, info.call_id, cfg))
        if outcome.summary is None:
            return _fall_back(result, info, ctx, outcome.fallback)
        new = SUMMARY_HEADER.format(tool=info.tool, tokens=tokens) + outcome.summary
        sent = ctx.count(as_sent(new, info, ctx))  # the recall note after it included
        if sent >= tokens:  # a "summary" that saves nothing: the cap does better
            why = f"summarizer_not_shorter: {sent:,} >= {tokens:,} tokens"
            return _fall_back(result, info, ctx, why)
        _note(ctx, info, text, tokens, new, ctx.count(new))
        return result.with_text(new)


def _fall_back(
    result: ToolResult, info: ResultInfo, ctx: Context, fallback: str | None
) -> ToolResult:
    """``result`` capped instead of summarized (the tool's ``max_tokens``, else the
    summary's), the edit saying why even where nothing was cut."""
    rules = info.rules.rules if info.rules is not None else None
    assert rules is not None
    assert rules.summarize is not None
    limit = rules.max_tokens or rules.summarize.max_tokens
    return cap_result(
        result, info, ctx, limit, rules.truncate, rules.notice, "summarize", fallback=fallback
    )


def _note(
    ctx: Context,
    info: ResultInfo,
    text: str,
    tokens: int,
    new: str,
    after: int,
    fallback: str | None = None,
) -> None:
    """The step's edit of ``text`` into ``new`` (the same text, where only a fallback is
    said)."""
    ctx.add_edit(
        Edit(
            "summarize",
            info.tool,
            info.call_id,
            tokens,
            after,
            fallback=fallback,
            message_index=info.message_index,
            chars_before=len(text),
            chars_after=len(new),
        )
    )


# ------------------------------------------------------------------ its own output

_SHORT = (SHORT_NOTICE, SHORT_RECALL_NOTICE)


@functools.lru_cache(maxsize=1024)
def _header_re(tool: str) -> re.Pattern[str]:
    head, _, tail = SUMMARY_HEADER.partition("{tokens}")
    # 18 digits at most: more are no count this step wrote (and int() refuses over 4,300)
    return re.compile(re.escape(head.format(tool=tool)) + r"([0-9]{1,18})" + re.escape(tail))


def _summarized(text: str, tokens: int, info: ResultInfo, ctx: Context) -> bool:
    """Whether ``text`` is a summary this step wrote for the tool: it starts with the header,
    and is shorter than the result the header counts (a summary that is not is refused),
    its recall note included; or, without the note it ends with, was (sent before the note
    was measured with the summary: summarized again, it would lose its handle)."""
    found = _header_re(info.tool).match(text)
    if found is None:
        return False
    if tokens < int(found[1]):
        return True
    bare = without_note(text, ctx.config.recall.note, info.tool, info.call_id or "")
    return bare is not None and ctx.count(bare) < int(found[1])


def _capped(text: str, tokens: int, info: ResultInfo, ctx: Context) -> bool:
    """Whether ``text`` is a result this step capped instead of summarizing: the cap (of
    :func:`_fall_back`) leaves it as it is, and it holds the tool's notice (as the cap
    words it for this call, with or without the recall note) where the cap puts it: a line
    of its own in text, a ``"..."`` member or a line of a cut string in JSON."""
    rules = info.rules.rules if info.rules is not None else None
    assert rules is not None
    assert rules.summarize is not None
    limit = rules.max_tokens or rules.summarize.max_tokens
    tool, call_id = info.tool, info.call_id or ""
    if tokens > limit:  # the cap would cut it, but where its notice alone is over
        return is_marked(text, _SHORT, (), tool, call_id)
    notices = (*cap_notices(rules.notice, ctx.config.recall.note), *_SHORT)
    if line_marked(text, notices, tool, call_id):
        return True
    if len(text) > MAX_JSON_CHARS or not text.lstrip("\ufeff \t\r\n").startswith(("{", "[", '"')):
        return False  # the cap cuts no such text on its JSON structure
    try:
        data, _ = load_json(text)
    except (ValueError, RecursionError):
        return False
    return json_marked(text, data, notices, tool, call_id)
