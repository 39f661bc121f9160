"""What the engine keeps between and during applies: its memos, a prepared request, and
the :class:`Result` it hands back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ctxwin._core.conversation import Conversation, linked
from ctxwin._core.edit_map import EditMap, edit_map
from ctxwin._core.memo import BLOCK_ENTRIES, Memo, PrefixCache
from ctxwin._core.model import Message, ToolResult
from ctxwin._core.pairing import Linker
from ctxwin._core.records import Fix
from ctxwin._core.renaming import RepairMemo
from ctxwin._exceptions import BudgetExceeded
from ctxwin._report.build import build_report, window_events
from ctxwin._report.data import ToolStats
from ctxwin._report.report import Report
from ctxwin._report.tally import ToolTally
from ctxwin.formats import Adapter
from ctxwin.formats._base import ParseState
from ctxwin.formats._rendered import Rendered
from ctxwin.steps._base import Context, Limits
from ctxwin.steps._reasoning import reasoning_note
from ctxwin.steps._verdict import SummaryMemo
from ctxwin.tokens._meter import Overheads, TokenMeter

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxwin.tokens.counters import TokenCounter

__all__ = ["Caches", "Figures", "Prepared", "Ran", "Result", "figures", "flag_errors"]


class Caches:
    """The engine's own memos (bounded; see :class:`~ctxwin._core.memo.Memo`)."""

    def __init__(self) -> None:
        self._parse: dict[str, tuple[Memo, PrefixCache[ParseState]]] = {}
        self.links: PrefixCache[Linker] = PrefixCache()
        self.render = Memo()
        self.render_prefix: PrefixCache[Rendered] = PrefixCache()
        self._blocks: dict[tuple[int, object], tuple[TokenCounter, Memo]] = {}
        """Block token counts, per counter and image rule (the same block counts differently
        per counter, and its media per rule: :attr:`Overheads.images`)."""
        self.summaries = SummaryMemo()
        self.flagged = Memo()
        self.repair = RepairMemo()
        self._meters: dict[tuple[str, int, bool, object], tuple[TokenCounter, TokenMeter]] = {}

    def share_parsing(self, other: Caches) -> None:
        """Use another policy's parse and pairing memos (they do not depend on counting)."""
        self._parse = other._parse
        self.links = other.links
        self.summaries = other.summaries

    def parse_caches(self, fmt: str) -> tuple[Memo, PrefixCache[ParseState]]:
        """The parse memos of one format (the same dict parses differently per format)."""
        caches = self._parse.get(fmt)
        if caches is None:
            caches = self._parse[fmt] = (Memo(), PrefixCache())
        return caches

    def meter(
        self, counter: TokenCounter, adapter: Adapter, overheads: Overheads | None = None
    ) -> TokenMeter:
        """The token meter of a format and a counter (overheads differ per format, and per
        request where it says whether earlier turns' reasoning is read: see
        :func:`~ctxwin._feedback.limits.overheads_for`; counts per counter: a model's own
        counter keeps memos of its own)."""
        overheads = overheads or adapter.overheads
        rule = overheads.images  # a block counts by one image rule per memo entry
        key = (adapter.cache_name, id(counter), overheads.drops_earlier_reasoning, rule)
        found = self._meters.get(key)
        if found is None or found[0] is not counter:
            blocks = self._blocks.get((id(counter), rule))
            if blocks is None or blocks[0] is not counter:
                blocks = self._blocks[id(counter), rule] = (counter, Memo(BLOCK_ENTRIES))
            found = (counter, TokenMeter(counter, overheads, blocks[1], Memo()))
            self._meters[key] = found
        return found[1]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request parsed and, where a provider would reject it, repaired."""

    adapter: Adapter
    before: Conversation
    fixed: Conversation
    fixes: list[Fix]
    model: str | None = None
    limits: tuple[tuple[int, Limits], ...] = ()
    notes: tuple[str, ...] = ()
    overheads: Overheads | None = None
    """The format's overheads for this request (None: the format's own)."""


@dataclass(frozen=True, slots=True)
class Ran:
    """What the chain made: the conversation, or how far it got before the budget stopped it."""

    conv: Conversation
    over: BudgetExceeded | None


class Result:
    """What :meth:`Policy.apply` returns.

    ``request`` is the edited body, in the input's format and shape (the input is never
    modified; unedited messages are the very objects you passed). ``conversation`` is the
    same request in neutral form, ``fixes`` the pairing repairs made first. ``report`` is
    computed on first access.
    """

    def __init__(
        self,
        *,
        request: object,
        prepared: Prepared,
        after: Conversation,
        context: Context,
        notes: Sequence[str],
    ) -> None:
        self.request = request
        self.conversation = after
        self.fixes = tuple(prepared.fixes)
        self.model = prepared.model
        """The model the request is for (its ``model`` field, or as passed to apply)."""
        self._before = prepared.before
        self._repaired = prepared.fixed
        self._context = context
        self._notes = (*prepared.notes, *notes)
        count = context.envelope_tokens
        self._envelopes = (count(prepared.before), count(prepared.fixed), count(after))
        """The envelope's tokens (system, tools...) as parsed, as repaired and as sent: a
        tool list the caller changes in place afterwards does not change what this request
        counted (nor what ``observe`` learns from it, nor its report, built when read)."""
        self._envelope = self._envelopes[2]

    @cached_property
    def edit_map(self) -> EditMap:
        """For each message of ``request``: the input message it came from, and whether and
        how it changed (see :class:`~ctxwin.EditMap`)."""
        return edit_map(self._before, self.conversation)

    @cached_property
    def report(self) -> Report:
        ctx = self._context
        limits = ctx.limits()
        note = reasoning_note(ctx, self.conversation)
        return build_report(
            self._before,
            self.conversation,
            meter=ctx.meter,
            context_window=limits.provider_window or limits.context_window,
            ratio=limits.ratio,
            fixes=self.fixes,
            edits=ctx.edits,
            notes=(*self._notes, note) if note else self._notes,
            repaired=self._repaired,
            envelopes=self._envelopes,
        )

    @property
    def limits(self) -> Limits:
        """The limits the request was made under (window, pricing, breakpoints, ratio)."""
        return self._context.limits()

    @property
    def read_positions(self) -> tuple[int, ...]:
        """The positions of the request's messages the provider reads: all but those it
        drops before reading it (the reasoning items of earlier turns, on OpenAI
        Responses), which count nothing and are left out of the prefix its cache compares."""
        return tuple(self._context.meter.kept(self.conversation.messages))

    def prefix_tokens(self, n: int) -> int:
        """ctxwin's count of the request's first ``n`` messages, system and tools included,
        as the provider reads them (without what it drops: earlier turns' reasoning)."""
        meter = self._context.meter
        conv = self.conversation
        return self._envelope + sum(meter.read(conv.messages)[:n])

    @property
    def tokens(self) -> int:
        """ctxwin's count of the request as sent (system and tools included)."""
        return self._context.meter.conversation(self.conversation, self._envelope)

    def __repr__(self) -> str:
        return f"<ctxwin.Result {self._context.format} {len(self.conversation.messages)} messages>"


@dataclass(frozen=True, slots=True)
class Figures:
    """What a replay adds up of each request's report (:func:`figures`)."""

    window_events: int
    exact: bool
    tools: tuple[ToolStats, ...]


def figures(result: Result, links: PrefixCache[Linker], tally: ToolTally) -> Figures:
    """The window events, exactness and tools of ``result``'s report, as it gives them,
    without building the rest of it (its rounds, edits and notes, each over the whole
    request: a replay that built every request's report did that work over again at every
    request). ``links``: linkers of the requests sent before, which the conversation sent
    is paired from (as the engine pairs its input), not afresh; ``tally``: their per-tool
    sums, which the tools are counted from (what changed since, not every result again)."""
    ctx = result._context
    before, fixed, after = result._before, result._repaired, result.conversation
    linked(after, links, (after.format, after.server_state, after.rules.unique_ids))
    meter = ctx.meter
    tokens_after = meter.conversation(after, result._envelope)
    return Figures(
        window_events(ctx.edits),
        meter.counter.exact,
        tally.tools(before, fixed, after, result.fixes, meter, tokens_after),
    )


def flag_errors(conv: Conversation, errors: frozenset[str], memo: Memo) -> Conversation:
    """``conv`` with the results of the ``errors`` calls flagged as errors (the same message
    objects as last time for the same flags, so the memos downstream still hit)."""
    salt = hash(errors)
    out = list(conv.messages)
    changed = False
    for mi, msg in enumerate(out):
        if not any(
            isinstance(b, ToolResult) and b.call_id in errors and not b.is_error for b in msg.blocks
        ):
            continue
        hit = memo.get(msg, salt)
        if not isinstance(hit, Message):
            blocks = tuple(
                dataclasses.replace(b, is_error=True)
                if isinstance(b, ToolResult) and b.call_id in errors
                else b
                for b in msg.blocks
            )
            hit = dataclasses.replace(msg, blocks=blocks)
            memo.put(msg, hit, salt)
        out[mi] = hit
        changed = True
    return conv.with_messages(tuple(out)) if changed else conv
