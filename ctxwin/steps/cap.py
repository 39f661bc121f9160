"""Capping: cut a long result to a token budget on exact token boundaries, with a notice."""

from __future__ import annotations

from ctxwin._core.model import ToolResult
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._cut import cap_result

__all__ = ["Cap"]


class Cap:
    """Cut results over the tool's ``max_tokens`` (``truncate``: head, tail or head_tail).

    The notice counts against the cap: where the tool's notice alone does not fit (a long
    tool name, the recall note), a short one stands in for it (``[... 1992 of 2001 tokens
    cut ...]``). Errors are capped too (kept verbatim up to the cap). The cap is on the
    text: images and files are kept (the window clears them with an old result), counted
    as the report counts them, and where they take the result over the cap the edit says
    so (an edit that cuts nothing when the text fits). Cutting never
    tokenizes more than needed: a 50 MB result costs a few windows of ``max_tokens`` tokens,
    not 50 MB.
    """

    name = "cap"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        rules = info.rules.rules if info.rules is not None else None
        if rules is None or rules.max_tokens is None:
            return result
        return cap_result(result, info, ctx, rules.max_tokens, rules.truncate, rules.notice, "cap")
