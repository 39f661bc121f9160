"""The policy engine: ``Policy.apply(request) -> Result``.

One direction: the adapter parses the body into a neutral conversation (repairing pairing
first if the provider would reject it), the steps run in order, the adapter renders the
result in the body's own format and shape. The engine's memos (parsed messages, pairing,
rendered messages, token counts) and each step's own memos only make later applies faster;
what ``apply`` returns depends on the history and the policy alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import threading
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ctxwin._core.check import NOTHING_TO_SEND, has_errors, nothing_left
from ctxwin._core.conversation import Conversation, linked
from ctxwin._core.repair import RepairTexts, repair_conversation
from ctxwin._entry import (
    ModelCounters,
    checked_errors,
    checked_model,
    context_elsewhere,
    recall_arguments,
    unsummarized,
    unsummarized_note,
)
from ctxwin._exceptions import BudgetExceeded, InputError, PolicyError, user_stacklevel
from ctxwin._feedback.calibration import Calibration, ConversationRatios
from ctxwin._feedback.limits import limits_for, overheads_for, provider_side, resolve_pricing
from ctxwin._feedback.session import Session
from ctxwin._feedback.usage import read_usage
from ctxwin._policy.callbacks import check_callbacks
from ctxwin._policy.compile import CompiledPolicy, PolicySource, compile_policy, validate_config
from ctxwin._policy.schema import PolicyConfig
from ctxwin._policy.tables import Pricing
from ctxwin._result import Caches, Prepared, Ran, Result, flag_errors
from ctxwin._validate import FormatLike, checked_server_state, with_server_state
from ctxwin.formats import Adapter, adapter_of, detect, get_adapter
from ctxwin.formats._chat_thinking import for_claude
from ctxwin.formats._recall import check_call_id, recall_definition, recall_output
from ctxwin.steps._base import Context, ResultStep, Step
from ctxwin.steps._shelf import RecallAnswer, shelf_for
from ctxwin.steps._summaries import SummarizerLike, SummaryService
from ctxwin.steps.breakpoints import CacheBreakpoints
from ctxwin.steps.budget import BudgetGuard
from ctxwin.steps.edit_results import EditResults
from ctxwin.steps.window import Window
from ctxwin.stores import Store
from ctxwin.stores._base import store_argument
from ctxwin.tokens.counters import TOKENIZERS, MemoCounter, TokenCounter, get_counter

__all__ = ["Policy", "Result", "default_steps", "load_policy"]

CounterLike = TokenCounter | Callable[[str], int]


def default_steps(result_steps: Sequence[ResultStep] | None = None) -> list[Step]:
    """The built-in chain: per-result edits, the window (with overflow drops), the cache
    breakpoints, the budget guard."""
    return [EditResults(result_steps), Window(), CacheBreakpoints(), BudgetGuard()]


class Policy:
    """A loaded, validated policy, ready to apply before each request.

    ``summarizer(text, *, tool, call_id, max_tokens, instructions) -> str`` (sync or async;
    see :class:`~ctxwin.Summarizer`) is used by tools whose rules ask for summaries.
    ``counter`` overrides the policy's ``tokenizer`` (any :class:`~ctxwin.TokenCounter` or
    ``callable(text) -> int``); ``model_counters`` gives a model (by name prefix, e.g.
    ``{"claude": count_tokens}``, a provider's count endpoint) a counter of its own, called
    once per new text (memoized by content); ``counters`` names counters that policy files
    may refer to by name. ``steps`` replaces the chain (see :func:`default_steps`);
    ``format`` fixes the wire format (a name or an adapter) instead of detecting it on every
    call. ``store`` (a URL or a :class:`~ctxwin.stores.Store`) replaces ``store:``, checked
    alike. ``follow_symlinks`` lets a policy folder hold links to files outside it (refused
    by default).
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
        model_counters: Mapping[str, CounterLike] | None = None,
        store: Store | str | None = None,
        follow_symlinks: bool = False,
    ) -> None:
        check_callbacks(
            summarizer=summarizer, counter=counter, counters=counters, model_counters=model_counters
        )
        copied = isinstance(source, CompiledPolicy)  # a copy of a policy: it warned at load
        if isinstance(source, CompiledPolicy):
            self.compiled = source
        else:
            known = None if counter is not None else (*TOKENIZERS, *(counters or {}))
            self.compiled = compile_policy(
                source if source is not None else PolicyConfig(),
                tokenizers=known,
                follow_symlinks=follow_symlinks,
            )
        self._unsummarized = unsummarized_note(self.compiled)
        self.summarizer = summarizer
        tokenizer = self.compiled.config.tokenizer
        if counter is not None:
            base = get_counter(counter)
        elif counters and tokenizer in counters:
            base = get_counter(counters[tokenizer])
        else:
            base = get_counter(tokenizer)
        self.counter = MemoCounter(base)
        own = {prefix: MemoCounter(get_counter(c)) for prefix, c in (model_counters or {}).items()}
        self._counters = ModelCounters(self.counter, own)
        self.steps: list[Step] = list(steps) if steps is not None else default_steps()
        self.format = get_adapter(format) if format is not None else None
        self._caches = Caches()
        self._lock = threading.RLock()
        r = self.compiled.config.repair
        self._repair_texts = RepairTexts(**r.model_dump())
        self.calibration = Calibration()
        """What usage feedback taught this policy, per model (see :meth:`observe`)."""
        self._ratios = ConversationRatios()
        self.shelf = shelf_for(self.config.store, store_argument(store))
        """The policy's store (recall originals, shared summaries), opened on first use."""
        warning = None if copied or summarizer is not None else unsummarized(self.compiled)
        if warning is not None:
            warnings.warn(warning, stacklevel=user_stacklevel())

    @property
    def config(self) -> PolicyConfig:
        return self.compiled.config

    def clear_memo(self) -> None:
        """Forget every memoized parse, edit, count and summary (outputs do not change,
        except that failed summaries are tried again)."""
        with self._lock:
            self._caches = Caches()
            self._ratios.clear_memo()
            self._counters.clear()
            for step in self.steps:
                clear = getattr(step, "clear_memo", None)
                if callable(clear):
                    clear()

    def __repr__(self) -> str:
        where = ", ".join(self.compiled.sources) or "<dict>"
        window = self.config.context_window
        shown = f"{window:,}" if isinstance(window, int) else window
        return f"<ctxwin.Policy {where} context_window={shown}>"

    # ----------------------------------------------------------------- apply

    def apply(
        self,
        request: object,
        format: FormatLike | None = None,
        *,
        errors: Collection[str] = (),
        server_state: bool | None = None,
        model: str | None = None,
    ) -> Result:
        """The request edited by the policy: valid pairing, edited results, window, budget.

        ``request`` is a request body or a bare list of messages/items in any of the four
        formats (detected, or named by ``format``). Raises :class:`~ctxwin.FormatError` for
        malformed input, :class:`~ctxwin.InputError` for a request with nothing to send and
        :class:`~ctxwin.BudgetExceeded` under ``overflow: error``.

        ``errors`` names calls (by id) whose results are errors where the wire format has no
        flag for it (OpenAI Chat and Responses): error results are never selected away or
        summarized. ``server_state=True`` says earlier turns live on the provider's side
        (results whose calls are not in the request are kept); it overrides the policy's
        ``server_state``. ``model`` names the model when the body does not (its profile gives
        ``context_window: auto`` and the pricing, and calibration is kept per model).

        Summaries are fetched in parallel, each waited for no longer than its
        ``summarize.timeout`` (an async summarizer runs on ctxwin's summary loop, one for
        the process, on a thread). A ``KeyboardInterrupt``, ``SystemExit``... the
        summarizer raises comes out of ``apply``; an ``Exception`` falls back to the cap.
        """
        with self.shelf.request():
            with self._lock:
                prepared = self._prepare(request, format, errors, server_state, model)
                ctx = self._context(prepared)
                conv = self._run(prepared, ctx)
                if not ctx.summaries.pending:
                    return self._finish(prepared, conv, ctx)
            ctx.summaries.run_sync()  # unlocked: other requests go on
            return self._last_pass(prepared, ctx.summaries)

    async def aapply(
        self,
        request: object,
        format: FormatLike | None = None,
        *,
        errors: Collection[str] = (),
        server_state: bool | None = None,
        model: str | None = None,
    ) -> Result:
        """Like :meth:`apply`, awaiting an async summarizer as tasks of the running loop
        (sync ones run in daemon threads of their own).

        A task is cancelled at its ``summarize.timeout`` and not awaited, and its late
        answer is refused; but an async summarizer that blocks the loop (``time.sleep``)
        blocks it for everyone until it yields: Python cannot preempt it.

        Under a store that waits on I/O (``sqlite``, ``redis``, a store object of your own)
        used by recall or summaries, the passes run on a worker thread (``asyncio.to_thread``):
        the store's calls, each bounded by ``store.timeout``, do not hold up the loop.
        """
        offload = not self.shelf.local and (self.recall_enabled or self.summarizer is not None)

        def first() -> Result | tuple[Prepared, SummaryService]:
            with self._lock:
                prepared = self._prepare(request, format, errors, server_state, model)
                ctx = self._context(prepared)
                conv = self._run(prepared, ctx)
                if not ctx.summaries.pending:  # nothing to await: one pass, as apply's
                    return self._finish(prepared, conv, ctx)
                return prepared, ctx.summaries

        with self.shelf.request():  # its store notes, apart from requests interleaved with it
            done = await asyncio.to_thread(first) if offload else first()
            if isinstance(done, Result):
                return done
            prepared, service = done
            await service.run_async(offload=offload)
            last = functools.partial(self._last_pass, prepared, service)
            return await asyncio.to_thread(last) if offload else last()

    def _last_pass(self, prepared: Prepared, summaries: SummaryService) -> Result:
        """The pass once ``summaries`` are in (kept there through a ``clear_memo``)."""
        with self._lock:
            ctx = self._context(prepared, summaries)
            conv = self._run(prepared, ctx)
            return self._finish(prepared, conv, ctx)

    def _prepare(
        self,
        request: object,
        format: FormatLike | None,
        errors: Collection[str] = (),
        server_state: bool | None = None,
        model: str | None = None,
    ) -> Prepared:
        model, flagged = checked_model(model), checked_errors(errors)
        server_state = checked_server_state(server_state)
        adapter = get_adapter(format or self.format or detect(request))
        if model is None and isinstance(request, Mapping) and isinstance(request.get("model"), str):
            model = request["model"]
        adapter = for_claude(adapter, request, model)  # LiteLLM's thinking_blocks, to Claude
        caches = self._caches
        before = adapter.parse(request, *caches.parse_caches(adapter.cache_name))
        before = provider_side(self._with_server_state(before, server_state), request, model)
        if flagged:
            before = flag_errors(before, flagged, caches.flagged)
        key = (adapter.cache_name, before.server_state, before.rules.unique_ids)
        linker = linked(before, caches.links, key)
        if not before.messages:
            raise InputError(NOTHING_TO_SEND, path=adapter.container)
        if has_errors(before, linker.verdicts):
            texts = self._repair_texts
            fixed, fixes = repair_conversation(before, adapter, texts=texts, memo=caches.repair)
            if not fixed.messages:
                raise InputError(nothing_left(len(before.messages), fixes), path=adapter.container)
            return self._limited(Prepared(adapter, before, fixed, fixes, model), request)
        return self._limited(Prepared(adapter, before, before, [], model), request)

    def _limited(self, prepared: Prepared, request: object) -> Prepared:
        """The request with its limits (the policy's for its model, calibrated) and the
        format's overheads for it."""
        model = prepared.model
        ratio = self._ratios.points(model, prepared.fixed, self.calibration.ratio(model))
        limits, notes = limits_for(self.config, model, prepared.adapter.name, ratio)
        notes += self._counters.estimate_notes(model)
        overheads = overheads_for(prepared.adapter, request, model)
        return dataclasses.replace(prepared, limits=limits, notes=tuple(notes), overheads=overheads)

    def _with_server_state(self, conv: Conversation, given: bool | None) -> Conversation:
        """``conv`` with the ``server_state`` asked for (the argument's, else the policy's)."""
        wanted = {"yes": True, "no": False}.get(self.config.server_state)
        return with_server_state(conv, given if given is not None else wanted)

    def _context(self, prepared: Prepared, summaries: SummaryService | None = None) -> Context:
        adapter, counter = prepared.adapter, self.counter_for(prepared.model)
        if summaries is None:  # a new pass; the last one keeps the service it waited on
            summaries = SummaryService(self.summarizer, self._caches.summaries, counter, self.shelf)
        return Context(
            policy=self.compiled,
            counter=counter,
            meter=self._caches.meter(counter, adapter, prepared.overheads),
            format=adapter.name,
            summaries=summaries,
            limits=prepared.limits,
            shelf=self.shelf,
        )

    def with_overrides(
        self,
        *,
        context_window: int | str | None = None,
        tokenizer: str | None = None,
        pricing: str | Mapping[str, float] | None = None,
    ) -> Policy:
        """The same policy with other defaults, sharing what stays valid: the compiled tool
        rules, the parsed messages and pairing, the summaries, and (with the same tokenizer)
        the token counts and the calibration. ``context_window`` may be ``"auto"``.

        Raises :class:`~ctxwin.PolicyError` for a value the policy cannot take.
        """
        given = {"context_window": context_window, "tokenizer": tokenizer, "pricing": pricing}
        changes = {k: v for k, v in given.items() if v is not None}
        if tokenizer is not None and tokenizer not in TOKENIZERS:
            raise PolicyError(
                f"unknown tokenizer {tokenizer!r:.60}: use {', '.join(TOKENIZERS[:3])}",
                key="tokenizer",
            )
        config = validate_config({**self.config.model_dump(exclude_unset=True), **changes})
        new = Policy(
            dataclasses.replace(self.compiled, config=config),
            summarizer=self.summarizer,
            counter=self.counter.inner if tokenizer is None else None,
            steps=self.steps,
            format=self.format,
        )
        new.shelf = self.shelf
        new._lock = self._lock  # the memos it shares (its steps' at least) are this policy's
        if tokenizer is None:  # the same memo: its meters and counts are this policy's
            new.counter, new._caches = self.counter, self._caches
            new.calibration, new._ratios = self.calibration, self._ratios
        else:
            new._caches.share_parsing(self._caches)
        new._counters = ModelCounters(new.counter, self._counters.own)
        return new

    # ----------------------------------------------------------------- recall

    @property
    def recall_enabled(self) -> bool:
        """Whether the policy keeps originals for recall (``recall:`` on, or on for some
        tool), so that an agent under it needs the ``recall`` tool."""
        compiled = self.compiled
        return compiled.config.recall.enabled or any(t.rules.recall for t in compiled.tools)

    def recall(self, handle: str, lines: object = None, grep: str | None = None) -> RecallAnswer:
        """What the ``recall`` tool answers for a handle a placeholder or notice quotes:
        the original content exactly, or its ``lines`` (``"10-20"``, 1-based, inclusive,
        line endings kept), or the lines matching ``grep`` (a regular expression), each as
        ``N:line``. Never raises for what an agent may send: an unknown or malformed handle,
        a bad range or pattern, a store that is down, all give an answer with ``is_error``.
        """
        return self.shelf.recall(handle, lines, grep)

    def recall_tool(self, format: FormatLike) -> dict[str, Any]:
        """The recall tool's definition in a wire format, to add to the request's tools."""
        return recall_definition(get_adapter(format).name)

    def recall_result(
        self, call_id: str | None, arguments: object, format: FormatLike
    ) -> dict[str, Any]:
        """The answer to one recall call (its id and its arguments, a dict or JSON text) as
        the format's result: a ``tool`` message (OpenAI Chat), a ``function_call_output``
        item (Responses), a ``tool_result`` block (Anthropic, with ``is_error``), a
        ``functionResponse`` part (Gemini, ``{"error": ...}`` for errors). ``call_id``: None
        only for a Gemini call without one (else an :class:`~ctxwin.InputError`, at once)."""
        name = get_adapter(format).name
        check_call_id(name, call_id)
        answer = self.recall_call(arguments)
        return recall_output(name, call_id, answer.text, is_error=answer.is_error)

    def recall_call(self, arguments: object) -> RecallAnswer:
        """The answer to a recall call's arguments (a dict, or the JSON text of one)."""
        args = recall_arguments(arguments)
        return args if isinstance(args, RecallAnswer) else self.recall(*args)

    # ----------------------------------------------------------------- feedback

    def context(
        self, request: object, format: FormatLike | None = None, server_state: bool | None = None
    ) -> Context:
        """The step :class:`~ctxwin.Context` of a request (counting, rules, limits), for
        tools built on a policy (replays, tuners) that look at a request as steps do;
        ``server_state`` as :meth:`apply` takes it."""
        with self._lock:
            return self._context(self._prepare(request, format, server_state=server_state))

    def counter_for(self, model: str | None) -> MemoCounter:
        """The counter of a model: its own (``model_counters``), else the policy's (not claimed
        exact where the model's profile names another tokenizer: ``gpt-4`` under ``o200k_base``)."""
        return self._counters(checked_model(model))

    def session(self) -> Session:
        """A :class:`~ctxwin.Session`: one conversation's requests, counted and as reported."""
        return Session(self)

    def pricing(self, model: str | None = None) -> Pricing:
        """The pricing the policy means for a model (see ``pricing:``)."""
        return resolve_pricing(self.config, checked_model(model))

    def adapter_of(self, result: Result) -> Adapter:
        """The adapter a result was made with."""
        return adapter_of(result.conversation)

    def observe(self, result: Result, usage: object) -> float:
        """Take the provider's reported usage for a request this policy made (a response,
        its ``usage``, or a :class:`~ctxwin.Usage`): ctxwin's count of the same request is
        compared with it, and the ratio the window uses for the request's model is learned
        (see :mod:`ctxwin._feedback.calibration`). Returns the ratio now in force.

        Decisions already made stay made: a new ratio applies to the messages folded from
        then on, in every conversation the policy serves. Anything but a Result, or a count
        not a whole number, is an InputError. A usage billing tokens ctxwin never saw (the
        context on the provider's side: ``previous_response_id``, ``conversation``,
        ``server_state=True``, a Gemini ``cachedContent``; a server-side tool loop's passes
        summed, unlisted: :attr:`~ctxwin.Usage.request_tokens`) is not learned from, with a
        :class:`~ctxwin.CalibrationWarning`: the ratio in force is returned unchanged.
        """
        if not isinstance(result, Result):
            raise InputError(f"observe takes the Result of apply, not {type(result).__name__}")
        reported = read_usage(usage)
        with self._lock:
            model, conv = result.model, result.conversation
            at = len(conv.messages)
            elsewhere = context_elsewhere(conv)
            sent = reported.request_tokens  # a server-side tool loop sums its passes
            billed, summed = (reported.input_tokens, False) if sent is None else (sent, not sent)
            return self.calibration.observe(model, result.tokens, billed, at, elsewhere, summed)

    def _run(self, prepared: Prepared, ctx: Context) -> Ran:
        conv = prepared.fixed
        try:
            for step in self.steps:
                conv = step(conv, ctx)
                if ctx.summaries.pending and not ctx.summaries.waited:  # done again once in:
                    break  # the steps after would fold (and memoize) a history not yet final
        except BudgetExceeded as over:
            return Ran(conv, over)
        return Ran(conv, None)

    def _finish(self, prepared: Prepared, ran: Ran, ctx: Context) -> Result:
        if ran.over is not None:
            result = Result(
                request=None, prepared=prepared, after=ran.conv, context=ctx, notes=self._notes()
            )
            raise BudgetExceeded(
                tokens=ran.over.tokens, limit=ran.over.limit, report=result.report
            ) from None
        if not ran.conv.messages:
            raise InputError(
                "the policy left nothing to send: the request is over the context window "
                "and has no user message to keep",
                path=prepared.adapter.container,
            )
        self.shelf.tend(prepared.fixed, ran.conv)  # put again what the store may have lost
        request = prepared.adapter.render(ran.conv, self._caches.render, self._caches.render_prefix)
        return Result(
            request=request, prepared=prepared, after=ran.conv, context=ctx, notes=self._notes()
        )

    def _notes(self) -> list[str]:
        notes = self.shelf.take_notes()
        unapplied = self._unsummarized if self.summarizer is None else None
        return notes if unapplied is None else [*notes, unapplied]


def load_policy(
    path: PolicySource,
    *,
    summarizer: SummarizerLike | None = None,
    counter: CounterLike | None = None,
    counters: Mapping[str, CounterLike] | None = None,
    steps: Sequence[Step] | None = None,
    format: FormatLike | None = None,
    store: Store | str | None = None,
    follow_symlinks: bool = False,
) -> Policy:
    """Load a policy from a folder of YAML files, one YAML file, or a dict; validate it all.

    Raises :class:`~ctxwin.PolicyError` (or :class:`~ctxwin.PolicyErrors` listing several)
    naming the file, line, key and, for JMESPath, the column. A file of the folder that links
    out of it is refused unless ``follow_symlinks``.
    """
    return Policy(
        path,
        summarizer=summarizer,
        counter=counter,
        counters=counters,
        steps=steps,
        format=format,
        store=store,
        follow_symlinks=follow_symlinks,
    )
