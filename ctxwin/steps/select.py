"""Selection: keep only the fields the agent needs, with a JMESPath expression per tool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jmespath.exceptions import JMESPathError

from ctxwin._core.jsontext import compact_json
from ctxwin._core.model import ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._cut import SHORT_NOTICE, SHORT_RECALL_NOTICE
from ctxwin.steps._jsoncut import holds_any, load_json, sendable
from ctxwin.steps._placeholder import placeholder_templates
from ctxwin.steps._selected import (
    as_sent,
    cap_notices,
    is_marked,
    is_selection,
    is_string_selection,
    json_marked,
)
from ctxwin.steps.summarize import SUMMARY_HEADER

__all__ = ["Select"]

NOTHING = "selection matched nothing: result kept whole"
SELECTS_AGAIN = "selection would be selected again from its own output: result kept whole"
NOT_SHORTER = (
    "selection with its recall note not shorter ({sent:,} >= {tokens:,} tokens): result kept whole"
)
"""The note of a selection that, with the recall note the request sends after it, would
not be shorter than the result."""


class Select:
    """Apply the tool's ``select`` JMESPath to results that parse as JSON.

    The selection is written as compact JSON with non-ASCII kept as is (a lone surrogate,
    which no request can carry, escaped); a selection that is a string is written as the
    string itself (a lone surrogate as U+FFFD). A leading byte order mark is skipped. A
    result that is not JSON passes through unchanged, and so does one the expression
    selects nothing from (``null``, ``""``, ``[]``, ``{}``, or only these at any depth:
    ``[{"path": null, "line": null}]``, what the agent would read as "there is none" or as
    hits without their fields when the expression missed; a ``0``, a ``false`` or a
    non-empty string says something), or fails on at run time (``abs(name)`` where
    ``name`` is a string: a ``JMESPathTypeError``, fallback ``select_failed``), or whose
    selection holds a number a float cannot hold (``1e400``, 30 digits: written back it
    would say another number; fallback ``select_failed``): each is noted in the report,
    never raised. Errors are never selected away.

    What ctxwin wrote itself passes through without a note, so a policy applied to its own
    output edits nothing: a selection this expression can have written (compact JSON of
    its shape), a window placeholder (one written as JSON too), a capped text holding its
    notice. A selection the
    expression would select from again (``result`` of ``{"result": {"result": "ok",
    "logs": [...]}}`` writes an object that has a ``result``; ``to_string(a)`` writes JSON
    text; ``a || b`` an object with an ``a``) cannot be told from a raw result by its text:
    it is not written, the result is kept whole and noted (fallback ``select_failed``), the
    same in every pass.

    With recall on, a selection is measured as the request sends it, followed by the
    recall note: one that saves less than the note adds (compact JSON losing a field of a
    few tokens) is not written, the result goes whole with no note and the edit says so,
    the same in every pass.
    """

    name = "select"

    def __call__(self, result: ToolResult, info: ResultInfo, ctx: Context) -> ToolResult:
        compiled = info.rules.select if info.rules is not None else None
        if compiled is None or result.is_error or info.rules is None:
            return result
        text = result.text
        rules = info.rules.rules
        recall_note = ctx.config.recall.note
        marks = _Marks(
            notices=(
                *cap_notices(rules.notice, recall_note),
                recall_note,
                SUMMARY_HEADER,
                SHORT_NOTICE,
                SHORT_RECALL_NOTICE,
            ),
            placeholders=placeholder_templates(rules.placeholder, ctx),
            tool=info.tool,
            call_id=info.call_id or "",
        )
        out = _decide(text, compiled, marks)
        if out.new is not None and _selects_again(out.new, out.value, compiled, marks):
            out = _Outcome(why=SELECTS_AGAIN, fallback="select_failed")  # not a fixed point
        tokens = ctx.count(text)
        if out.new is not None and info.handle is not None:  # recall on: the note follows it
            sent = ctx.count(as_sent(out.new, info, ctx))
            if sent >= tokens:  # longer than the result it stands for: keep that
                out = _Outcome(why=NOT_SHORTER.format(sent=sent, tokens=tokens))
        if out.new is None and out.why is None:
            return result
        new = text if out.new is None else out.new
        ctx.add_edit(
            Edit(
                "select",
                info.tool,
                info.call_id,
                tokens,
                tokens if out.new is None else ctx.count(new),
                fallback=out.fallback,
                note=out.why,
                message_index=info.message_index,
                chars_before=len(text),
                chars_after=len(new),
            )
        )
        return result if out.new is None else result.with_text(new)


@dataclass(frozen=True, slots=True)
class _Marks:
    """What ctxwin writes for this call, which the step passes through unnoted."""

    notices: tuple[str, ...]
    placeholders: tuple[str, ...]
    tool: str
    call_id: str


@dataclass(frozen=True, slots=True)
class _Outcome:
    """A text to write (``new``, the selection ``value`` written), or the result kept
    whole: noted (``why``) or not."""

    new: str | None = None
    value: object = None
    why: str | None = None
    fallback: str | None = None


_KEEP = _Outcome()


def _decide(text: str, compiled: Any, marks: _Marks) -> _Outcome:
    """What the step does with ``text``: a pure function of the text, the expression and
    the call (so a pass over its own output can be foreseen)."""
    if is_marked(text, marks.placeholders, (), marks.tool, marks.call_id):
        return _KEEP  # cleared by ctxwin, a placeholder written as JSON too: nothing to select
    try:
        data, inexact = load_json(text)
    except RecursionError:
        return _Outcome(why="JSON nested too deeply to select from: passed through unchanged")
    except ValueError:
        if is_marked(text, (), marks.notices, marks.tool, marks.call_id):
            return _KEEP  # capped by ctxwin: nothing to select
        if is_string_selection(compiled.parsed, text):
            return _KEEP  # a text this expression wrote
        return _Outcome(why="not JSON: passed through unchanged")
    return _decide_json(text, data, inexact, compiled, marks)


def _selects_again(new: str, selected: object, compiled: Any, marks: _Marks) -> bool:
    """Whether the step, given the selection ``new`` it wrote (of ``selected``), would write
    another: what :func:`_decide_json` writes on, its conditions taken cheapest first. Only
    JSON is selected from: a string selection that is no JSON text passes, noted or not;
    other selections read back as ``selected``, every float exact."""
    try:
        if isinstance(selected, str):
            data, inexact = load_json(new)
        else:
            data, inexact = selected, frozenset()
        value = compiled.search(data)
    except (JMESPathError, RecursionError, ArithmeticError, ValueError, TypeError):
        return False
    if _says_nothing(value) or holds_any(value, inexact) or _written(value) == new:
        return False
    if json_marked(new, data, marks.notices, marks.tool, marks.call_id):
        return False
    return not is_selection(compiled.parsed, new, data, strict=True)


def _written(value: object) -> str:
    """A selection as the step writes it: a string as itself, else compact JSON (a lone
    surrogate, which no request can carry, as U+FFFD or escaped)."""
    if isinstance(value, str):
        return sendable(value, json_text=False)
    return sendable(compact_json(value), json_text=True)


def _decide_json(
    text: str, data: object, inexact: frozenset[float], compiled: Any, marks: _Marks
) -> _Outcome:
    """:func:`_decide` for a text that is JSON (``data``)."""
    if json_marked(text, data, marks.notices, marks.tool, marks.call_id):
        return _KEEP  # JSON ctxwin cut or noted: its notice is inside
    try:
        value = compiled.search(data)
    except (JMESPathError, RecursionError, ArithmeticError, ValueError, TypeError) as e:
        # a function's type error (abs of a string), ceil(Infinity), too deep...
        if is_selection(compiled.parsed, text, data, strict=False):
            return _KEEP
        reason = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        return _Outcome(
            why=f"selection failed ({reason}): result kept whole", fallback="select_failed"
        )
    if _says_nothing(value):  # the agent would read "there is none" (or hits without fields)
        if is_selection(compiled.parsed, text, data, strict=False):
            return _KEEP
        return _Outcome(why=NOTHING)
    if holds_any(value, inexact):
        return _Outcome(
            why="selection holds a number a float cannot hold exactly: result kept whole",
            fallback="select_failed",
        )
    new = _written(value)
    if new == text or is_selection(compiled.parsed, text, data, strict=True):
        return _KEEP  # already selected (re-selecting {id: order_id} would give null)
    return _Outcome(new=new, value=value)


def _says_nothing(value: object) -> bool:
    """Whether a selection says nothing: ``null``, ``""``, ``[]``, ``{}``, or lists and
    objects holding only these at any depth (a multi-select of fields the result does not
    have, ``[{"path": null}]`` from hits that name it otherwise). A ``0``, a ``false``, a
    non-empty string says something. Iterative: any depth."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None and node != "":
            return False
    return True
