"""The policy engine: ``Policy.apply(request) -> Result``.

One direction: the adapter parses the body into a neutral conversation (repairing pairing
first if the provider would reject it), the steps run in order, the adapter renders the
result in the body's own format and shape. Memo caches (parsed messages, edited results,
token counts, the window's fold, summaries) live on the :class:`Policy` and only make later
applies faster; what ``apply`` returns depends on the history and the policy alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from ctxwin._exceptions import BudgetExceeded
from ctxwin._memo import PrefixCache
from ctxwin._meter import TokenMeter
from ctxwin._model import Conversation, Message, ToolCall, ToolResult
from ctxwin._pairing import Linker
from ctxwin._policy import CompiledPolicy, PolicyConfig, compile_policy
from ctxwin._problems import has_errors
from ctxwin._repair import Fix, repair_conversation
from ctxwin._report import Report, RoundStats, ToolStats
from ctxwin.formats import Adapter, Memo, detect, get_adapter
from ctxwin.steps._base import Context, Edit, ResultStep, Step
from ctxwin.steps.results import EditResults
from ctxwin.steps.summarize import SummarizerLike, SummaryRunner
from ctxwin.steps.window import FoldState, Window
from ctxwin.tokens import MemoCounter, TokenCounter, get_counter


class EngineMemo:
    """The memo caches of one policy (bounded; see :class:`ctxwin.formats.Memo`)."""

    def __init__(self) -> None:
        self._parse: dict[str, tuple[Memo, PrefixCache[list[Message]]]] = {}
        self.links: PrefixCache[Linker] = PrefixCache()
        self.render = Memo()
        self.render_prefix: PrefixCache[list[object]] = PrefixCache()
        self.block_tokens = Memo(400_000)
        self.results = Memo()
        self.result_prefix: PrefixCache[Any] = PrefixCache()
        self.rebuilt = Memo()
        self.folds: PrefixCache[FoldState] = PrefixCache()
        self.summaries: dict[tuple[str, str, int, str], Any] = {}
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
            meter = TokenMeter(counter, adapter, self.block_tokens, Memo())
            self._meters[adapter.name] = meter
        return meter


class BudgetGuard:
    """After the window: raise :class:`BudgetExceeded` when ``overflow: error`` and the
    request is still over ``context_window``."""

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        if context.config.overflow != "error":
            return conversation
        out = context.window_output
        if out is not None and out[0] is conversation:
            tokens = out[1]  # the window's running total: no recount
        else:
            tokens = context.conversation_tokens(conversation)
        if tokens > context.config.context_window:
            context.over_budget = tokens
        return conversation


def default_steps(result_steps: Sequence[ResultStep] | None = None) -> list[Step]:
    """The built-in chain: per-result edits, the window (with overflow drops), the guard."""
    return [EditResults(result_steps), Window(), BudgetGuard()]


class Result:
    """What :meth:`Policy.apply` returns.

    ``request`` is the edited body, in the input's format and shape (the input is never
    modified; unedited messages are the very objects you passed). ``report`` is computed on
    first access.
    """

    def __init__(
        self,
        *,
        request: object,
        before: Conversation,
        after: Conversation,
        fixes: Sequence[Fix],
        context: Context,
        edits: Callable[[], list[Edit]],
    ) -> None:
        self.request = request
        self.conversation = after
        self.fixes = tuple(fixes)
        self._before = before
        self._ctx = context
        self._edits = edits

    @cached_property
    def report(self) -> Report:
        return build_report(self._before, self.conversation, self.fixes, self._ctx, self._edits())

    def __repr__(self) -> str:
        return (
            f"<ctxwin.Result {self._ctx.adapter.name} {len(self.conversation.messages)} messages>"
        )


class Policy:
    """A loaded, validated policy, ready to apply before each request.

    ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str`` (sync or async)
    is used by tools whose rules ask for summaries. ``counter`` overrides the policy's
    ``tokenizer`` (any :class:`~ctxwin.tokens.TokenCounter` or ``callable(text) -> int``);
    ``counters`` names counters that policy files may refer to by name. ``steps`` replaces
    the chain (see :func:`default_steps`); ``format`` fixes the wire format instead of
    detecting it on every call.
    """

    def __init__(
        self,
        source: str | Path | Mapping[str, Any] | PolicyConfig | CompiledPolicy | None = None,
        *,
        summarizer: SummarizerLike | None = None,
        counter: TokenCounter | Callable[[str], int] | None = None,
        counters: Mapping[str, TokenCounter | Callable[[str], int]] | None = None,
        steps: Sequence[Step] | None = None,
        format: str | None = None,
    ) -> None:
        if isinstance(source, CompiledPolicy):
            self.compiled = source
        else:
            self.compiled = compile_policy(source if source is not None else PolicyConfig())
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
        self.format = format
        if format is not None:
            get_adapter(format)  # unknown names fail here, not at the first request
        self.memo = EngineMemo()
        self._lock = threading.RLock()

    @property
    def config(self) -> PolicyConfig:
        return self.compiled.config

    def clear_memo(self) -> None:
        """Forget every memoized parse, edit, count and summary (outputs do not change,
        except that failed summaries are tried again)."""
        with self._lock:
            self.memo = EngineMemo()

    # ----------------------------------------------------------------- apply

    def apply(self, request: object, format: str | None = None) -> Result:
        """The request edited by the policy: valid pairing, edited results, window, budget.

        ``request`` is a request body or a bare list of messages/items in any of the four
        formats (detected, or named by ``format``). Raises :class:`~ctxwin.FormatError` for
        malformed input and :class:`~ctxwin.BudgetExceeded` under ``overflow: error``.
        """
        with self._lock:
            adapter, before, fixed, fixes = self._prepare(request, format)
            ctx, runner = self._context(adapter)
            conv = self._run(fixed, ctx)
            if runner.pending:
                runner.run_sync(self.counter.count)
                ctx, runner = self._context(adapter)
                conv = self._run(fixed, ctx)
            return self._finish(adapter, before, conv, fixes, ctx)

    async def aapply(self, request: object, format: str | None = None) -> Result:
        """Like :meth:`apply`, awaiting an async summarizer (sync ones run in threads)."""
        with self._lock:
            adapter, before, fixed, fixes = self._prepare(request, format)
            ctx, runner = self._context(adapter)
            self._run(fixed, ctx)
            pending = runner.pending
        if pending:
            await runner.run_async(self.counter.count)
        with self._lock:
            ctx, runner = self._context(adapter)
            conv = self._run(fixed, ctx)
            return self._finish(adapter, before, conv, fixes, ctx)

    def _prepare(
        self, request: object, format: str | None
    ) -> tuple[Adapter, Conversation, Conversation, list[Fix]]:
        adapter = get_adapter(format or self.format or detect(request))
        memo = self.memo
        before = adapter.parse(request, *memo.parse_caches(adapter.name))
        key = (adapter.name, before.server_state)
        found = memo.links.take(before.messages, key)
        if found is not None:
            linker = found[1]
        else:
            linker = Linker(adapter.rules, before.server_state)
            linker.cache_key = key
        linker.feed(before.messages)
        memo.links.put(before.messages, linker)
        before.set_pairing(linker.pairing())
        fixed, fixes = before, list[Fix]()
        if has_errors(before, linker.verdicts):
            fixed, fixes = repair_conversation(before)
        return adapter, before, fixed, fixes

    def _context(self, adapter: Adapter) -> tuple[Context, SummaryRunner]:
        runner = SummaryRunner(self.summarizer, self.memo.summaries)
        ctx = Context(
            policy=self.compiled,
            counter=self.counter,
            adapter=adapter,
            memo=self.memo,
            summaries=runner,
        )
        return ctx, runner

    def _run(self, conv: Conversation, ctx: Context) -> Conversation:
        for step in self.steps:
            conv = step(conv, ctx)
        return conv

    def _finish(
        self,
        adapter: Adapter,
        before: Conversation,
        conv: Conversation,
        fixes: list[Fix],
        ctx: Context,
    ) -> Result:
        request = adapter.render(conv, self.memo.render, self.memo.render_prefix)
        edit_lists, n_edits = ctx.result_edit_lists
        fold = ctx.fold

        def edits() -> list[Edit]:
            out = [e for es in edit_lists[:n_edits] for e in es]
            if fold is not None:
                out.extend(Window.edits(*fold))
            return out

        result = Result(
            request=request, before=before, after=conv, fixes=fixes, context=ctx, edits=edits
        )
        if ctx.over_budget is not None:
            raise BudgetExceeded(
                tokens=ctx.over_budget, limit=self.config.context_window, report=result.report
            )
        return result


def load_policy(
    path: str | Path | Mapping[str, Any],
    *,
    summarizer: SummarizerLike | None = None,
    counter: TokenCounter | Callable[[str], int] | None = None,
    counters: Mapping[str, TokenCounter | Callable[[str], int]] | None = None,
    steps: Sequence[Step] | None = None,
    format: str | None = None,
) -> Policy:
    """Load a policy from a folder of YAML files, one YAML file, or a dict; validate it all.

    Raises :class:`~ctxwin.PolicyError` (or :class:`~ctxwin.PolicyErrors` listing several)
    naming the file, line, key and, for JMESPath, the column.
    """
    compiled = compile_policy(path)
    tokenizer = compiled.config.tokenizer
    if counter is None and not (counters and tokenizer in counters):
        _check_tokenizer(compiled, tokenizer)
    return Policy(
        compiled,
        summarizer=summarizer,
        counter=counter,
        counters=counters,
        steps=steps,
        format=format,
    )


def _check_tokenizer(compiled: CompiledPolicy, name: str) -> None:
    from ctxwin._exceptions import PolicyError

    if name not in ("o200k_base", "cl100k_base", "approx", "approx-4-chars"):
        raise PolicyError(
            f"unknown tokenizer {name!r}: use o200k_base, cl100k_base, approx, or pass "
            f"load_policy(counters={{{name!r}: ...}})",
            file=compiled.sources[0] if len(compiled.sources) == 1 else None,
            key="tokenizer",
        )


def build_report(
    before: Conversation, after: Conversation, fixes: Sequence[Fix], ctx: Context, edits: list[Edit]
) -> Report:
    tokens_before = ctx.conversation_tokens(before)
    tokens_after = ctx.conversation_tokens(after)
    per_tool: dict[str, list[int]] = {}
    for ref in before.results():
        s = per_tool.setdefault(ref.tool, [0, 0, 0])
        s[0] += 1
        s[1] += ctx.block_tokens(ref.result)
    for ref in after.results():
        s = per_tool.setdefault(ref.tool, [0, 0, 0])
        s[2] += ctx.block_tokens(ref.result)
    tools = tuple(
        sorted(
            (
                ToolStats(name, c, b, a, a / tokens_after if tokens_after else 0.0)
                for name, (c, b, a) in per_tool.items()
            ),
            key=lambda t: (-t.tokens_before, t.tool),
        )
    )
    rounds = _round_stats(before, after, ctx)
    notes: list[str] = []
    if ctx.summaries.summarizer is None:
        asked = sorted(t.pattern for t in ctx.policy.tools if t.rules.summarize is not None)
        if asked:
            notes.append(
                f"summarize rules for {', '.join(asked)} were not applied: no summarizer was "
                "passed to the policy (the caps applied instead)"
            )
    return Report(
        format=before.format,
        counter=ctx.counter.name,
        exact=ctx.counter.exact,
        context_window=ctx.config.context_window,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        messages_before=len(before.messages),
        messages_after=len(after.messages),
        tools=tools,
        rounds=rounds,
        edits=tuple(edits),
        fixes=tuple(fixes),
        window_events=ctx.fold[4] if ctx.fold is not None else 0,
        over_budget=tokens_after > ctx.config.context_window,
        notes=tuple(notes),
    )


def _round_stats(before: Conversation, after: Conversation, ctx: Context) -> tuple[RoundStats, ...]:
    out_by_index = {}
    for msg in after.messages:
        if msg.index is not None:
            out_by_index[msg.index] = msg
    stats = []
    for rnd in before.pairing.rounds:
        members = set(rnd.messages) | {loc[0] for loc in rnd.results.values()}
        tb = ta = 0
        present = 0
        edited = False
        for mi in sorted(members):
            m = before.messages[mi]
            tb += ctx.message_tokens(m)
            o = out_by_index.get(m.index) if m.index is not None else None
            if o is not None:
                present += 1
                ta += ctx.message_tokens(o)
                edited = edited or o is not m
        tools = tuple(
            b.name
            for mi in rnd.messages
            for b in before.messages[mi].blocks
            if isinstance(b, ToolCall)
        )
        state = "dropped" if present == 0 else ("edited" if edited else "kept")
        stats.append(RoundStats(rnd.index, before.messages[rnd.start].index, tools, tb, ta, state))
    return tuple(stats)


__all__ = [
    "BudgetGuard",
    "EngineMemo",
    "Policy",
    "Result",
    "ToolResult",
    "default_steps",
    "load_policy",
]
