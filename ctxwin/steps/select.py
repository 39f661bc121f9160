"""Selection: keep only the fields the agent needs, with a JMESPath expression per tool."""

from __future__ import annotations

from jmespath.exceptions import JMESPathError

from ctxwin._core.jsontext import compact_json
from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin._policy.schema import RECALL_PLACEHOLDER
from ctxwin.steps._base import Context, ResultInfo, text_tokens
from ctxwin.steps._cut import SHORT_NOTICE, SHORT_RECALL_NOTICE
from ctxwin.steps._jsoncut import holds_any, load_json, sendable
from ctxwin.steps._selected import is_marked, is_selection, is_string_selection, json_marked
from ctxwin.steps.summarize import SUMMARY_HEADER

__all__ = ["Select"]


class Select:
    """Apply the tool's ``select`` JMESPath to results that parse as JSON.

    The selection is written as compact JSON with non-ASCII kept as is (a lone surrogate,
    which no request can carry, escaped); a selection that is a string is written as the
    string itself (a lone surrogate as U+FFFD). A leading byte order mark is skipped. A
    result that is not JSON passes through unchanged, and so does one the expression
    selects nothing from (``null``, ``""``, ``[]``, ``{}``, or only nulls: what the agent
    would read as "there is none" when the expression missed), or fails on at run time
    (``abs(name)`` where ``name`` is a string: a ``JMESPathTypeError``, fallback
    ``select_failed``), or whose selection holds a number a float cannot hold (``1e400``,
    30 digits: written back it would say another number; fallback ``select_failed``):
    each is noted in the report, never raised. Errors are never selected away.

    What ctxwin wrote itself passes through without a note, so a policy applied to its own
    output edits nothing: a selection this expression can have written (compact JSON of
    its shape), a window placeholder, a capped text holding its notice.
    """

    name = "select"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        compiled = info.rules.select if info.rules is not None else None
        if compiled is None or result.is_error or info.rules is None:
            return result
        text = result.text
        rules = info.rules.rules

        def note(why: str, fallback: str | None = None) -> ToolResult:
            tokens = text_tokens(text, ctx)[0]
            ctx.add_edit(
                Edit(
                    "select",
                    info.tool,
                    info.call_id,
                    tokens,
                    tokens,
                    fallback=fallback,
                    note=why,
                    message_index=info.message_index,
                    chars_before=len(text),
                    chars_after=len(text),
                )
            )
            return result

        recall_note = ctx.config.recall.note
        notices = [rules.notice, recall_note, SUMMARY_HEADER, SHORT_NOTICE, SHORT_RECALL_NOTICE]
        try:
            data, inexact = load_json(text)
        except RecursionError:
            return note("JSON nested too deeply to select from: passed through unchanged")
        except ValueError:
            templates = (rules.placeholder, ctx.config.window.placeholder, RECALL_PLACEHOLDER)
            placeholders = [q for p in templates if p for q in (p, f"{p} {recall_note}")]
            if is_marked(text, placeholders, notices, info.tool, info.call_id or ""):
                return result  # cleared or capped by ctxwin: nothing to select
            if is_string_selection(compiled.parsed, text):
                return result  # a text this expression wrote
            return note("not JSON: passed through unchanged")
        if json_marked(data, notices, info.tool, info.call_id or ""):
            return result  # JSON ctxwin cut or noted: its notice is inside
        try:
            value = compiled.search(data)
        except (JMESPathError, RecursionError, ArithmeticError, ValueError, TypeError) as e:
            # a function's type error (abs of a string), ceil(Infinity), too deep...
            if is_selection(compiled.parsed, text, data, strict=False):
                return result
            reason = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            return note(f"selection failed ({reason}): result kept whole", "select_failed")
        if _empty(value):  # the agent would read "there is none" (or an empty result)
            if is_selection(compiled.parsed, text, data, strict=False):
                return result
            return note("selection matched nothing: result kept whole")
        if holds_any(value, inexact):
            return note(
                "selection holds a number a float cannot hold exactly: result kept whole",
                "select_failed",
            )
        if isinstance(value, str):
            new = sendable(value, json_text=False)
        else:
            new = sendable(compact_json(value), json_text=True)
        if new == text or is_selection(compiled.parsed, text, data, strict=True):
            return result  # already selected (re-selecting {id: order_id} would give null)
        ctx.add_edit(
            Edit(
                "select",
                info.tool,
                info.call_id,
                text_tokens(text, ctx)[0],
                ctx.count(new),
                message_index=info.message_index,
                chars_before=len(text),
                chars_after=len(new),
            )
        )
        return result.with_text(new)


def _empty(value: object) -> bool:
    """Whether a selection says nothing: ``null``, ``""``, ``[]``, ``{}``, or only nulls
    (a multi-select of fields the result does not have)."""
    if value is None or value == "":
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, list) and all(v is None for v in value)
