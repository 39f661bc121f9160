"""Selection: keep only the fields the agent needs, with a JMESPath expression per tool."""

from __future__ import annotations

import json

from ctxwin._core.jsontext import compact_json
from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo, text_tokens

__all__ = ["Select"]


class Select:
    """Apply the tool's ``select`` JMESPath to results that parse as JSON.

    The selection is written as compact JSON with non-ASCII kept as is; a selection that is
    a string is written as the string itself. A result that is not JSON passes through
    unchanged, and so does one the expression selects nothing from (``null``): both are
    noted in the report. Errors are never selected away.
    """

    name = "select"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        compiled = info.rules.select if info.rules is not None else None
        if compiled is None or result.is_error:
            return result
        text = result.text
        tokens = text_tokens(text, ctx)[0]

        def note(why: str) -> ToolResult:
            ctx.add_edit(
                Edit(
                    "select",
                    info.tool,
                    info.call_id,
                    tokens,
                    tokens,
                    note=why,
                    message_index=info.message_index,
                    chars_before=len(text),
                    chars_after=len(text),
                )
            )
            return result

        try:
            data = json.loads(text)
        except ValueError:
            return note("not JSON: passed through unchanged")
        value = compiled.search(data)
        if value is None:
            return note("selection matched nothing: result kept whole")
        new = value if isinstance(value, str) else compact_json(value)
        if new == text:
            return result
        after = ctx.count(new)
        ctx.add_edit(
            Edit(
                "select",
                info.tool,
                info.call_id,
                tokens,
                after,
                message_index=info.message_index,
                chars_before=len(text),
                chars_after=len(new),
            )
        )
        return result.with_text(new)
