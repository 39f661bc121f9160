"""The token-budget report of an apply: where the tokens go and what each edit saved."""

from __future__ import annotations

from dataclasses import dataclass

from ctxwin._report.as_json import report_json
from ctxwin._report.data import ReportData
from ctxwin._report.markdown import report_markdown
from ctxwin._report.text import report_text

__all__ = ["Report"]


@dataclass(frozen=True)
class Report(ReportData):
    """What an apply did, in tokens.

    ``tokens_before``/``tokens_after`` count the whole request (messages, system prompt,
    tool definitions, per-message overhead). ``counter`` names the tokenizer that counted and
    ``exact`` whether it is the one the policy asked for. ``to_text``, ``to_markdown`` and
    ``to_json`` render it.
    """

    # ----------------------------------------------------------------- renderings

    def to_text(self, width: int = 100, *, max_edits: int = 20) -> str:
        """The report as aligned plain-text tables fitting ``width`` columns.

        A summary (format, counter and whether it is exact, tokens before -> after, saved,
        share of the context window, messages, window events, over budget), then per tool,
        the biggest rounds, and the edits (the ``max_edits`` that saved most, the rest in
        one "... and K more" line), pairing fixes and notes. Where repair changed the
        request, the tools and rounds have a ``repair`` column (the tokens it added, +, or
        took away, -: ``before + repair - saved = after``) and its ``repair`` edits come
        first.
        """
        return report_text(self, width, max_edits=max_edits)

    def to_markdown(self, *, max_edits: int = 20) -> str:
        """The same content as :meth:`to_text`, as GitHub-flavoured Markdown tables."""
        return report_markdown(self, max_edits=max_edits)

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON (non-ASCII kept as is). The schema, version 1::

            {
              "version": 1,
              "format": "openai-chat" | "anthropic" | "openai-responses" | "gemini",
              "counter": {"name": str, "exact": bool},
              "context_window": int,
              "tokens": {"before": int, "after": int, "saved": int,
                         "window_share": float},  # after x calibration / context_window
              "messages": {"before": int, "after": int},
              "over_budget": bool,                # after x calibration > context_window
              "window_events": int,                         # times the window cleared
              "tools": [{"tool": str,
                         "calls": int,                      # the tool's calls in it
                         "tokens_before": int,              # its results', as parsed
                         "repaired": int,                   # + added by repair, - dropped
                         "tokens_after": int,               # as sent
                         "saved": int,  # by the steps: before + repaired - after
                         "share": float}],                  # of the request, after
              "rounds": [{"index": int, "message_index": int | null, "tools": [str],
                          "tokens_before": int, "repaired": int, "tokens_after": int,
                          "state": "kept" | "edited" | "dropped"}],  # by the steps
              "edits": [{"step": str, "tool": str, "call_id": str | null,
                         "message_index": int | null, "tokens_before": int,
                         "tokens_after": int, "saved": int,
                         "fallback": str | null, "note": str | null}],
              "fixes": [{"code": str, "message_index": int | null, "path": str,
                         "call_id": str | null, "tool": str | null,
                         "description": str}],
              "notes": [str]
            }

        ``edits`` add up to ``tokens.saved``: what repair added or took away (a result
        written for an interrupted call, an orphan result dropped) is one edit of step
        ``"repair"`` per fix that changed the tokens (``note``: the fix's code, ``tool``
        ``"(no tool)"`` for a result that answers no call), listed first.

        Fields are only ever added within a version; a change of meaning bumps it.
        """
        return report_json(self)
