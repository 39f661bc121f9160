"""The token-budget report of an apply: where the tokens go and what each edit saved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxwin._repair import Fix
from ctxwin.steps._base import Edit

SCHEMA_VERSION = 1
"""Version of the JSON schema of :meth:`Report.to_dict` (see :meth:`Report.to_json`)."""


@dataclass(frozen=True, slots=True)
class ToolStats:
    """One tool's results in the request: before and after the policy."""

    tool: str
    calls: int
    tokens_before: int
    tokens_after: int
    share: float
    """Fraction of the request (after) that this tool's results take."""

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
            "share": round(self.share, 4),
        }


@dataclass(frozen=True, slots=True)
class RoundStats:
    """One round (assistant turn with calls, plus results) before and after."""

    index: int
    message_index: int | None
    tools: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    state: str
    """``kept``, ``edited`` (some result cut/selected/cleared) or ``dropped``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "message_index": self.message_index,
            "tools": list(self.tools),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "state": self.state,
        }


@dataclass(frozen=True)
class Report:
    """What an apply did, in tokens.

    ``tokens_before``/``tokens_after`` count the whole request (messages, system prompt,
    tool definitions, per-message overhead). ``counter`` names the tokenizer that counted and
    ``exact`` whether it is the one the policy asked for.
    """

    format: str
    counter: str
    exact: bool
    context_window: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    tools: tuple[ToolStats, ...]
    rounds: tuple[RoundStats, ...]
    edits: tuple[Edit, ...]
    fixes: tuple[Fix, ...] = ()
    window_events: int = 0
    over_budget: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def fallbacks(self) -> tuple[Edit, ...]:
        return tuple(e for e in self.edits if e.fallback)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (stable schema, see ``version``)."""
        return {
            "version": SCHEMA_VERSION,
            "format": self.format,
            "counter": {"name": self.counter, "exact": self.exact},
            "context_window": self.context_window,
            "tokens": {
                "before": self.tokens_before,
                "after": self.tokens_after,
                "saved": self.saved,
                "window_share": round(self.tokens_after / self.context_window, 4),
            },
            "messages": {"before": self.messages_before, "after": self.messages_after},
            "over_budget": self.over_budget,
            "window_events": self.window_events,
            "tools": [t.to_dict() for t in self.tools],
            "rounds": [r.to_dict() for r in self.rounds],
            "edits": [e.to_dict() for e in self.edits],
            "fixes": [f.to_dict() for f in self.fixes],
            "notes": list(self.notes),
        }

    # ----------------------------------------------------------------- renderings

    def to_text(self, width: int = 100, *, max_edits: int = 20) -> str:
        """The report as aligned plain-text tables fitting ``width`` columns.

        A summary (format, counter and whether it is exact, tokens before -> after, saved,
        share of the context window, messages, window events, over budget), then per tool,
        the biggest rounds, and the edits (the ``max_edits`` that saved most, the rest in
        one "... and K more" line), pairing fixes and notes.
        """
        from ctxwin._report_render import report_text

        return report_text(self, width, max_edits=max_edits)

    def to_markdown(self, *, max_edits: int = 20) -> str:
        """The same content as :meth:`to_text`, as GitHub-flavoured Markdown tables."""
        from ctxwin._report_render import report_markdown

        return report_markdown(self, max_edits=max_edits)

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON (non-ASCII kept as is). The schema, version 1::

            {
              "version": 1,
              "format": "openai-chat" | "anthropic" | "openai-responses" | "gemini",
              "counter": {"name": str, "exact": bool},
              "context_window": int,
              "tokens": {"before": int, "after": int, "saved": int,
                         "window_share": float},          # after / context_window
              "messages": {"before": int, "after": int},
              "over_budget": bool,                          # after > context_window
              "window_events": int,                         # times the window cleared
              "tools": [{"tool": str, "calls": int, "tokens_before": int,
                         "tokens_after": int, "saved": int,
                         "share": float}],                  # of the request, after
              "rounds": [{"index": int, "message_index": int | null, "tools": [str],
                          "tokens_before": int, "tokens_after": int,
                          "state": "kept" | "edited" | "dropped"}],
              "edits": [{"step": str, "tool": str, "call_id": str | null,
                         "message_index": int | null, "tokens_before": int,
                         "tokens_after": int, "saved": int,
                         "fallback": str | null, "note": str | null}],
              "fixes": [{"code": str, "message_index": int | null, "path": str,
                         "call_id": str | null, "tool": str | null,
                         "description": str}],
              "notes": [str]
            }

        Fields are only ever added within a version; a change of meaning bumps it.
        """
        from ctxwin._report_render import report_json

        return report_json(self)
