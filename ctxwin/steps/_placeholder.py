"""What a cleared result's placeholder says: the handle it quotes (its original kept by the
policy's :class:`~ctxwin.steps._shelf.Shelf`) and the template's text with recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxwin._core.model import Opaque, ToolResult
from ctxwin._policy.schema import DEFAULT_PLACEHOLDER, RECALL_PLACEHOLDER
from ctxwin.steps._handles import handle_of

if TYPE_CHECKING:
    from ctxwin.steps._base import Context

__all__ = ["placeholder_templates", "placeholder_text", "recall_handle"]


def recall_handle(result: ToolResult, tool: str, ctx: Context) -> str | None:
    """The handle a cleared result's placeholder quotes, worked out without the store
    (the caller keeps the original once the placeholder is known to save tokens); None
    without recall, or when the result holds more than text (an image, a file: the recall
    tool answers text, so it could not give those back); ``""`` when a result step
    shortened it and the store failed to keep the original then (or refused it): the
    placeholder quotes no handle, and its edit says why
    (:func:`~ctxwin.steps._fallbacks.fallback_of`)."""
    if not ctx.recall_on(tool) or ctx.shelf is None:
        return None
    if any(isinstance(part, Opaque) for part in result.content):
        return None
    if result.origin is not None:  # shortened by a result step, which kept the original
        return result.origin  # "": it could not: this text is not the original
    return handle_of(result.text)


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
