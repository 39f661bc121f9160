"""What a cleared result's placeholder says: the handle it quotes (its original kept by the
policy's :class:`~ctxwin.steps._shelf.Shelf`) and the template's text with recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxwin._core.model import Opaque, ToolResult
from ctxwin._policy.schema import DEFAULT_NOTICE, DEFAULT_PLACEHOLDER, RECALL_PLACEHOLDER
from ctxwin.steps._cut import SHORT_RECALL_NOTICE
from ctxwin.steps._handles import HANDLE_RE, handle_of
from ctxwin.steps._jsoncut import MAX_JSON_CHARS, load_json
from ctxwin.steps._selected import Quoted, cap_notices, quoted_notice

if TYPE_CHECKING:
    from ctxwin.steps._base import Context

__all__ = [
    "FIGURES_SLACK",
    "own_handle",
    "placeholder_templates",
    "placeholder_text",
    "recall_handle",
]

FIGURES_SLACK = 8
"""Tokens (and one in a hundred of those kept) by which a cut text may differ from what its
notice says it kept, beside the notice (where the pieces join, the digits of the notice the
cut was measured with; one token either way in practice)."""


def recall_handle(result: ToolResult, tool: str, ctx: Context) -> tuple[str | None, str | None]:
    """The handle a cleared result's placeholder quotes, worked out without the store (but
    one read confirming the handle of a text holding a notice of ctxwin's:
    :func:`own_handle`), and the original the jump that clears it keeps then (the caller
    keeps it once the placeholder is known to save tokens; None: kept already, or none).

    The handle is None without recall, or when the result holds more than text (an image, a
    file: the recall tool answers text, so it could not give those back); ``""`` when a
    result step shortened it and the store failed to keep the original then (or refused
    it): the placeholder quotes no handle, and its edit says why
    (:func:`~ctxwin.steps._fallbacks.fallback_of`). A result a step shortened quotes the
    handle that step kept; so does one ctxwin shortened in an earlier request and the client
    sent back as it was given (it keeps ctxwin's output as its history: :func:`own_handle`),
    rather than the handle of the shortened text, which nothing else would quote."""
    if not ctx.recall_on(tool) or ctx.shelf is None:
        return None, None
    if any(isinstance(part, Opaque) for part in result.content):
        return None, None
    if result.origin is not None:  # shortened by a result step, which kept the original
        return result.origin, None  # "": it could not: this text is not the original
    text = result.text
    own = own_handle(text, tool, result.call_id or "", ctx)
    return (own, None) if own is not None else (handle_of(text), text)


def own_handle(text: str, tool: str, call_id: str, ctx: Context) -> str | None:
    """The handle ``text`` quotes in a notice ctxwin wrote for this call, where it writes
    one: a cap's (a line of its own; in JSON a ``"..."`` member or a line of a cut string),
    or the recall note after a summary or selection. That text is ctxwin's output sent
    back, and the handle its original's (a step quoting one kept it); None for any other
    text (a handle merely quoted in a raw result is no notice's).

    Raw output may hold such a notice word for word (``cat`` of an agent's log), and its
    handle is not its original's: the handle is taken only when the text's tokens are what
    the notice says the cut kept (where it says) and the handle is known to be kept
    (:class:`~ctxwin.steps._confirmed.Confirmed`: this shelf put it, or the store holds
    it). Otherwise None, and the text is kept under its own handle: never lost."""
    if ctx.shelf is None or HANDLE_RE.search(text) is None:  # most results: no handle
        return None
    found = _notice_in(text, tool, call_id, ctx)
    if found is None or not _figures_agree(text, found, ctx):
        return None
    return found.handle if ctx.shelf.confirmed(ctx.shelf, found.handle) else None


def _notice_in(text: str, tool: str, call_id: str, ctx: Context) -> Quoted | None:
    """The notice of ctxwin's quoting a handle that ``text`` holds where ctxwin writes one
    for this call (:func:`~ctxwin.steps._selected.quoted_notice`)."""
    rules = ctx.rules_for(tool)
    note = ctx.config.recall.note
    notices = (*cap_notices(rules.rules.notice if rules else DEFAULT_NOTICE, note), note)
    notices = (*notices, SHORT_RECALL_NOTICE)
    found = quoted_notice(text, None, notices, tool, call_id)  # a line of its own
    if found is not None or len(text) > MAX_JSON_CHARS:
        return found
    if not text.lstrip("\ufeff \t\r\n").startswith(("{", "[", '"')):
        return None  # ctxwin cuts no such text on its JSON structure
    try:
        data, _ = load_json(text)
    except (ValueError, RecursionError):
        return None
    return quoted_notice(text, data, notices, tool, call_id)


def _figures_agree(text: str, found: Quoted, ctx: Context) -> bool:
    """Whether ``text`` beside its notice holds the tokens the notice says a cut kept
    (``kept_tokens``, or ``total_tokens`` less ``omitted_tokens``), give or take
    :data:`FIGURES_SLACK`: a log holding such a notice among its many lines is no cut. A
    notice that says neither (the recall note after a summary or selection) agrees."""
    figures = found.figures
    kept = figures.get("kept_tokens")
    if kept is None and "total_tokens" in figures and "omitted_tokens" in figures:
        kept = figures["total_tokens"] - figures["omitted_tokens"]
    if kept is None:
        return True
    if kept < 0:
        return False  # more cut than there was
    beside = ctx.count(text) - ctx.count(found.notice)
    return abs(beside - kept) <= FIGURES_SLACK + kept // 100


def placeholder_text(template: str, handle: str | None, ctx: Context) -> str:
    """The placeholder template with recall: the recall default in place of the plain
    default, or the recall note after a template that does not quote ``{handle}``."""
    if handle is None:  # no recall, or the store is down: quote no handle
        return DEFAULT_PLACEHOLDER if "{handle}" in template else template
    if template == DEFAULT_PLACEHOLDER:
        return RECALL_PLACEHOLDER
    if "{handle}" not in template:
        return f"{template} {ctx.config.recall.note}"
    return template


def placeholder_templates(own: str | None, ctx: Context) -> tuple[str, ...]:
    """The templates a placeholder of a tool whose own template is ``own`` may be rendered
    from (its own, the window's, the recall default; each alone or followed by the recall
    note), so a step that finds one, written for this call, leaves it as it is: a policy
    applied to its own output edits nothing."""
    note = ctx.config.recall.note
    templates = (own, ctx.config.window.placeholder, RECALL_PLACEHOLDER)
    return tuple(q for p in templates if p for q in (p, f"{p} {note}"))
