"""The policy engine: ``Policy.apply(request) -> Result``.

One direction: the adapter parses the body into a neutral conversation (repairing pairing
first if the provider would reject it), the steps run in order, the adapter renders the
result in the body's own format and shape. The engine's memos (parsed messages, pairing,
rendered messages, token counts) and each step's own memos only make later applies faster;
what ``apply`` returns depends on the history and the policy alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ctxwin._core.check import has_errors
from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Message
from ctxwin._core.pairing import Linker
from ctxwin._core.records import Fix
from ctxwin._core.repair import repair_conversation
from ctxwin._exceptions import BudgetExceeded
from ctxwin._policy.compile import CompiledPolicy, PolicySource, compile_policy
from ctxwin._policy.schema import PolicyConfig
from ctxwin._report.build import build_report
from ctxwin._report.report import Report
from ctxwin._validate import FormatLike
from ctxwin.formats import Adapter, detect, get_adapter
from ctxwin.steps._base import Context, ResultStep, Step
from ctxwin.steps._summaries import SummarizerLike, SummaryService
from ctxwin.steps.budget import BudgetGuard
from ctxwin.steps.edit_results import EditResults
from ctxwin.steps.window import Window
from ctxwin.tokens._meter import TokenMeter
from ctxwin.tokens.counters import TOKENIZERS, MemoCounter, TokenCounter, get_counter

__all__ = ["Policy", "Result", "default_steps", "load_policy"]

CounterLike = TokenCounter | Callable[[str], int]


def default_steps(result_steps: Sequence[ResultStep] | None = None) -> list[Step]:
    """The built-in chain: per-result edits, the window (with overflow drops), the guard."""
    return [EditResults(result_steps), Window(), BudgetGuard()]


class _Caches:
    """The engine's own memos (bounded; see :class:`~ctxwin._core.memo.Memo`)."""

    def __init__(self) -> None:
        self._parse: dict[str, tuple[Memo, PrefixCache[list[Message]]]] = {}
        self.links: PrefixCache[Linker] = PrefixCache()
        self.render = Memo()
        self.render_prefix: PrefixCache[list[object]] = PrefixCache()
        self.block_tokens = Memo(400_000)
        self.summaries: dict[object, object] = {}
        self._meters: dict[str, TokenMeter] = {}

    def parse_caches(self, fmt: str) -> tuple[Memo, PrefixCache[list[Message]]]:
        """The parse memos of one format (the same dict parses differently per format)."""
        caches = self._parse.get(fmt)
        if caches is None:
            caches = self._parse[fmt] = (Memo(), PrefixCache())
        return caches

    def meter(self, counter: TokenCounter, adapter: Adapter) -> TokenMeter:
        """The token meter of a format (one per format: overheads differ)."""
        meter = self._meters.get(adapter.name)
        if meter is None or meter.counter is not counter:
            meter = TokenMeter(counter, adapter.overheads, self.block_tokens, Memo())
            self._meters[adapter.name] = meter
        return meter


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A request parsed and, where a provider would reject it, repaired."""

    adapter: Adapter
    before: Conversation
    fixed: Conversation
    fixes: list[Fix]


@dataclass(frozen=True, slots=True)
class _Ran:
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
        prepared: _Prepared,
        after: Conversation,
        context: Context,
        notes: Sequence[str],
    ) -> None:
        self.request = request
        self.conversation = after
        self.fixes = tuple(prepared.fixes)
        self._before = prepared.before
        self._context = context
        self._notes = tuple(notes)

    @cached_property
    def report(self) -> Report:
        ctx = self._context
        return build_report(
            self._before,
            self.conversation,
            meter=ctx.meter,
            context_window=ctx.config.context_window,
            fixes=self.fixes,
            edits=ctx.edits,
            notes=self._notes,
        )

    def __repr__(self) -> str:
        return f"<ctxwin.Result {self._context.format} {len(self.conversation.messages)} messages>"


class Policy:
    """A loaded, validated policy, ready to apply before each request.

    ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str`` (sync or async;
    see :class:`~ctxwin.Summarizer`) is used by tools whose rules ask for summaries.
    ``counter`` overrides the policy's ``tokenizer`` (any :class:`~ctxwin.TokenCounter` or
    ``callable(text) -> int``); ``counters`` names counters that policy files may refer to
    by name. ``steps`` replaces the chain (see :func:`default_steps`); ``format`` fixes the
    wire format (a name or an adapter) instead of detecting it on every call.
    """

    def __init__(
        self,
        source: PolicySource | CompiledPolicy | None = None,
        *,
        summarizer: SummarizerLike | None = None,
        counter: CounterLike | None = None,
        counters: Mapping[str, CounterLike] | None = None,
        steps: Sequence[Step] | None = None,
        format: FormatLike | None = None,
    ) -> None:
        if isinstance(source, CompiledPolicy):
            self.compiled = source
        else:
            known = None if counter is not None else (*TOKENIZERS, *(counters or {}))
            self.compiled = compile_policy(
                source if source is not None else PolicyConfig(), tokenizers=known
            )
        self.summarizer = summarizer
        tokenizer = self.compiled.config.tokenizer
        if counter is not None:
            base = get_counter(counter)
        elif counters and tokenizer in counters:
            base = get_counter(counters[tokenizer])
        else:
            base = get_counter(tokenizer)
        self.counter = MemoCounter(base)
        self.steps: list[Step] = list(steps) if steps is not None else default_steps()
        self.format = get_adapter(format) if format is not None else None
        self._caches = _Caches()
        self._lock = threading.RLock()

    @property
    def config(self) -> PolicyConfig:
        return self.compiled.config

    def clear_memo(self) -> None:
        """Forget every memoized parse, edit, count and summary (outputs do not change,
        except that failed summaries are tried again)."""
        with self._lock:
            self._caches = _Caches()
            for step in self.steps:
                clear = getattr(step, "clear_memo", None)
                if callable(clear):
                    clear()

    def __repr__(self) -> str:
        where = ", ".join(self.compiled.sources) or "<dict>"
        return f"<ctxwin.Policy {where} context_window={self.config.context_window:,}>"

    # ----------------------------------------------------------------- apply

    def apply(self, request: object, format: FormatLike | None = None) -> Result:
        """The request edited by the policy: valid pairing, edited results, window, budget.

        ``request`` is a request body or a bare list of messages/items in any of the four
        formats (detected, or named by ``format``). Raises :class:`~ctxwin.FormatError` for
        malformed input and :class:`~ctxwin.BudgetExceeded` under ``overflow: error``.

        Summaries are fetched in parallel, each waited for no longer than its
        ``summarize.timeout`` (an async summarizer runs in an event loop of its own on a
        thread). A ``KeyboardInterrupt``, ``SystemExit``... the summarizer raises comes out
        of ``apply``; an ``Exception`` falls back to the cap.
        """
        with self._lock:
            prepared = self._prepare(request, format)
            ctx = self._context(prepared.adapter)
            conv = self._run(prepared, ctx)
            if ctx.summaries.pending:
                ctx.summaries.run_sync(self.counter.count)
                ctx = self._context(prepared.adapter)
                conv = self._run(prepared, ctx)
            return self._finish(prepared, conv, ctx)

    async def aapply(self, request: object, format: FormatLike | None = None) -> Result:
        """Like :meth:`apply`, awaiting an async summarizer as tasks of the running loop
        (sync ones run in daemon threads of their own).

        A task is cancelled at its ``summarize.timeout`` and not awaited, and its late
        answer is refused; but an async summarizer that blocks the loop (``time.sleep``)
        blocks it for everyone until it yields: Python cannot preempt it.
        """
        with self._lock:
            prepared = self._prepare(request, format)
            ctx = self._context(prepared.adapter)
            self._run(prepared, ctx)
            service = ctx.summaries
        if service.pending:
            await service.run_async(self.counter.count)
        with self._lock:
            ctx = self._context(prepared.adapter)
            conv = self._run(prepared, ctx)
            return self._finish(prepared, conv, ctx)

    def _prepare(self, request: object, format: FormatLike | None) -> _Prepared:
        adapter = get_adapter(format or self.format or detect(request))
        caches = self._caches
        before = adapter.parse(request, *caches.parse_caches(adapter.name))
        key = (adapter.name, before.server_state)
        found = caches.links.take(before.messages, key)
        if found is not None:
            linker = found[1]
        else:
            linker = Linker(adapter.rules, before.server_state)
            linker.cache_key = key
        linker.feed(before.messages)
        caches.links.put(before.messages, linker)
        before.set_pairing(linker.pairing())
        if has_errors(before, linker.verdicts):
            fixed, fixes = repair_conversation(before, adapter)
            return _Prepared(adapter, before, fixed, fixes)
        return _Prepared(adapter, before, before, [])

    def _context(self, adapter: Adapter) -> Context:
        return Context(
            policy=self.compiled,
            counter=self.counter,
            meter=self._caches.meter(self.counter, adapter),
            format=adapter.name,
            summaries=SummaryService(self.summarizer, self._caches.summaries),  # type: ignore[arg-type]
        )

    def _run(self, prepared: _Prepared, ctx: Context) -> _Ran:
        conv = prepared.fixed
        try:
            for step in self.steps:
                conv = step(conv, ctx)
        except BudgetExceeded as over:
            return _Ran(conv, over)
        return _Ran(conv, None)

    def _finish(self, prepared: _Prepared, ran: _Ran, ctx: Context) -> Result:
        if ran.over is not None:
            result = Result(
                request=None, prepared=prepared, after=ran.conv, context=ctx, notes=self._notes()
            )
            raise BudgetExceeded(
                tokens=ran.over.tokens, limit=ran.over.limit, report=result.report
            ) from None
        request = prepared.adapter.render(ran.conv, self._caches.render, self._caches.render_prefix)
        return Result(
            request=request, prepared=prepared, after=ran.conv, context=ctx, notes=self._notes()
        )

    def _notes(self) -> list[str]:
        if self.summarizer is not None:
            return []
        asked = sorted(t.pattern for t in self.compiled.tools if t.rules.summarize is not None)
        if not asked:
            return []
        return [
            f"summarize rules for {', '.join(asked)} were not applied: no summarizer was "
            "passed to the policy (the caps applied instead)"
        ]


def load_policy(
    path: PolicySource,
    *,
    summarizer: SummarizerLike | None = None,
    counter: CounterLike | None = None,
    counters: Mapping[str, CounterLike] | None = None,
    steps: Sequence[Step] | None = None,
    format: FormatLike | None = None,
) -> Policy:
    """Load a policy from a folder of YAML files, one YAML file, or a dict; validate it all.

    Raises :class:`~ctxwin.PolicyError` (or :class:`~ctxwin.PolicyErrors` listing several)
    naming the file, line, key and, for JMESPath, the column.
    """
    return Policy(
        path,
        summarizer=summarizer,
        counter=counter,
        counters=counters,
        steps=steps,
        format=format,
    )
