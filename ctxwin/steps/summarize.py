"""Summarization through the user's model callback, memoized, with timeouts and fallbacks.

The summarizer is ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str``,
sync or async. ctxwin calls it for results over ``summarize.over_tokens`` and memoizes the
summary by content (text, tool, budget, instructions) for the policy's lifetime, so a
result is summarized once and reads the same in every later request. If the callback
raises, times out, returns nothing or returns more than 1.1 x ``max_tokens``, the result is
capped instead and the report says why; that outcome is memoized too (no retry storm, and
the request prefix stays stable).
"""

from __future__ import annotations

from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo, text_tokens
from ctxwin.steps._cut import cap_result
from ctxwin.steps._summaries import AsyncSummarizer, Summarizer, SummarizerLike, SummaryRequest

__all__ = ["SUMMARY_HEADER", "AsyncSummarizer", "Summarize", "Summarizer", "SummarizerLike"]

SUMMARY_HEADER = "[summary of {tool} output ({tokens} tokens)]\n"


class Summarize:
    """Summarize results over ``summarize.over_tokens`` through the policy's summarizer.

    Without a summarizer (none passed to the policy) the step does nothing and the cap
    applies. Errors are never summarized.
    """

    name = "summarize"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        rules = info.rules.rules if info.rules is not None else None
        cfg = rules.summarize if rules is not None else None
        if cfg is None or result.is_error or ctx.summaries.summarizer is None:
            return result
        assert rules is not None
        text = result.text
        tokens = text_tokens(text, ctx)[0]  # counted: a character may be several tokens
        if tokens <= cfg.over_tokens:
            return result
        outcome = ctx.summaries.lookup(SummaryRequest(text, info.tool, info.call_id, cfg))
        if outcome.summary is None:
            capped = cap_result(
                result,
                info,
                ctx,
                rules.max_tokens or cfg.max_tokens,
                rules.truncate,
                rules.notice,
                "summarize",
                fallback=outcome.fallback,
            )
            if capped is result:  # short enough for the cap: nothing cut, but say why
                ctx.add_edit(
                    Edit(
                        "summarize",
                        info.tool,
                        info.call_id,
                        tokens,
                        tokens,
                        fallback=outcome.fallback,
                        message_index=info.message_index,
                        chars_before=len(text),
                        chars_after=len(text),
                    )
                )
            return capped
        new = SUMMARY_HEADER.format(tool=info.tool, tokens=tokens) + outcome.summary
        ctx.add_edit(
            Edit(
                "summarize",
                info.tool,
                info.call_id,
                tokens,
                ctx.count(new),
                message_index=info.message_index,
                chars_before=len(text),
                chars_after=len(new),
            )
        )
        return result.with_text(new)
