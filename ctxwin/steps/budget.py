"""The budget guard: the request must fit the context window under ``overflow: error``."""

from __future__ import annotations

from ctxwin._core.conversation import Conversation
from ctxwin._exceptions import BudgetExceeded
from ctxwin.steps._base import Context

__all__ = ["BudgetGuard"]


class BudgetGuard:
    """After the window: raise :class:`~ctxwin.BudgetExceeded` when ``overflow: error`` and
    the request is still over ``context_window`` (the engine attaches the report)."""

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        if context.config.overflow != "error":
            return conversation
        tokens = context.conversation_tokens(conversation)
        limit = context.limits().context_window
        if tokens > limit:
            raise BudgetExceeded(tokens=tokens, limit=limit, report=None)
        return conversation
