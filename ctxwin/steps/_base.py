"""What every step sees: the protocols for writing a step, and the per-apply context.

This is the extension API. A conversation step is ``step(conversation, context) ->
conversation``; a result step is ``step(result, info, context) -> result`` and runs inside
:class:`~ctxwin.EditResults`. Both get a :class:`Context`: the policy, counting, and
``add_edit`` to say what they changed. Steps never modify what they are given; they return
new objects (the ``with_*`` methods of the neutral model).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Iterator, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import (
    Block,
    FormatName,
    Loc,
    Message,
    ToolResult,
)
from ctxwin._core.records import Edit
from ctxwin._policy.schema import DEFAULT_NOTICE

if TYPE_CHECKING:
    from ctxwin._policy.compile import CompiledPolicy, CompiledTool
    from ctxwin._policy.schema import PolicyConfig
    from ctxwin.steps._shelf import Shelf
    from ctxwin.steps._summaries import SummaryService
    from ctxwin.tokens._meter import TokenMeter
    from ctxwin.tokens.counters import MemoCounter

__all__ = [
    "Change",
    "Context",
    "Edit",
    "Limits",
    "ResultInfo",
    "ResultStep",
    "Step",
    "default_limits",
    "log_edit",
    "logger",
]

logger = logging.getLogger("ctxwin")


def log_edit(edit: Edit) -> None:
    """Log an edit made for the first time through the ``ctxwin`` logger (structured
    ``extra`` fields ``ctxwin_step``, ``ctxwin_tool``...), at INFO. (A summary that failed
    is logged once as a warning, when it is memoized: ``steps/_summaries.py``. Logged here
    at WARNING, it was said again at every request of a server that parses each afresh.)"""
    logger.info(
        "ctxwin %s %s %s: %d -> %d tokens%s",
        edit.step,
        edit.tool,
        edit.call_id,
        edit.tokens_before,
        edit.tokens_after,
        f" ({edit.fallback})" if edit.fallback else "",
        extra={
            "ctxwin_step": edit.step,
            "ctxwin_tool": edit.tool,
            "ctxwin_call_id": edit.call_id,
            "ctxwin_tokens_before": edit.tokens_before,
            "ctxwin_tokens_after": edit.tokens_after,
            "ctxwin_chars_before": edit.chars_before,
            "ctxwin_chars_after": edit.chars_after,
            "ctxwin_fallback": edit.fallback,
            "ctxwin_edit": edit,
        },
    )


@dataclass(frozen=True, slots=True)
class Change:
    """A change to content an earlier request of the conversation sent: the first block it
    changed (``loc``; block -1: the whole message) and the last message of the first request
    that carried it (``sent_with``). Thinking produced before it, after ``loc``, is bound to
    a prefix that is gone (:mod:`ctxwin.steps._binding`).

    ``before`` is the message as the requests before ``sent_with`` sent it, for a change a
    step before the window made (a result of ``edit_latest: false`` sent whole while its
    round was the latest): the window folds that message as it was then, and takes the
    change in at ``sent_with``, as those requests saw it (:mod:`ctxwin.steps._late`). The
    same object in every request of the conversation, so the window's memo finds it again.
    """

    loc: Loc
    sent_with: int
    before: Message | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Limits:
    """The window's numbers for one request, in the tokens ctxwin counts: the policy's, for
    the request's model, divided by the ratio usage calibration learned (a model whose
    provider counts 30% more than ctxwin gets a window 1/1.3 as large in ctxwin's tokens).

    ``pricing`` is what cached tokens cost; ``breakpoints`` how many explicit cache markers
    a request may carry and ``breakpoint`` their kind (``anthropic``, ``openai``, ``none``).
    """

    context_window: int
    trigger: int
    target: int
    drop_target: int
    """How far a forced drop goes (``window.drop_target``, resolved for the strategy)."""
    cache_write: float = 1.25
    cache_read: float = 0.1
    min_prefix: int = 0
    breakpoints: int = 0
    breakpoint: Literal["anthropic", "openai", "none"] = "none"
    ratio: float = 1.0
    model: str | None = None
    provider_window: int = 0
    """The context window in the provider's tokens, as the policy or the model's profile
    says it (0: not known apart from ``context_window``, which holds it then)."""

    def fold_key(self) -> object:
        """What a memoized fold made under these limits depends on, but for the
        calibration ratio: a new ratio applies to the messages folded after it was learned,
        and what was decided before stays decided (the numbers the ratio scales come from
        the provider's window, kept here, and the policy). Limits built by hand, without
        ``provider_window``, are keyed whole."""
        if not self.provider_window:
            return self
        return replace(
            self, context_window=0, trigger=0, target=0, drop_target=0, min_prefix=0, ratio=0.0
        )


@dataclass(frozen=True, slots=True)
class ResultInfo:
    """What a result step knows about the result it edits."""

    tool: str
    call_id: str | None
    rules: CompiledTool | None
    latest: bool
    """Whether the result belongs to the latest round."""
    message_index: int | None
    handle: str | None = None
    """The recall handle of the result's original content, when recall is on for its tool:
    a notice quotes it (``{handle}``) so the agent can get back what was cut."""

    def notice_fields(self, notice: str, ctx: Context) -> tuple[str, dict[str, object]]:
        """A notice template and its fields: with recall on, a template that does not quote
        ``{handle}`` is followed by the policy's recall note."""
        if self.handle is None and "{handle}" in notice:  # the store is down: no handle
            notice = DEFAULT_NOTICE
        elif self.handle is not None and "{handle}" not in notice:
            notice = f"{notice} {ctx.config.recall.note}"
        return notice, {
            "tool": self.tool,
            "call_id": self.call_id or "",
            "handle": self.handle or "",
        }


class Context:
    """What a step gets for one apply: the policy, counting, and a place for its edits.

    - ``policy`` (compiled: ``rules_for(tool)``), ``config`` (its defaults), ``format``;
    - counting: :meth:`count` (memoized by content), :meth:`block_tokens`,
      :meth:`message_tokens` and :meth:`conversation_tokens` (memoized by identity), so
      nothing is counted twice;
    - :meth:`add_edit`: every edit a step makes goes here, and so reaches the report
      (``result.report.edits``) and the ``ctxwin`` logger;
    - ``summaries``: the policy's summaries, looked up by content (the built-in
      :class:`~ctxwin.Summarize` step uses them);
    - ``window_cleared``: what the window step cleared, once it ran;
    - ``changed``: what the steps before changed of content already sent.
    """

    def __init__(
        self,
        *,
        policy: CompiledPolicy,
        counter: MemoCounter,
        meter: TokenMeter,
        format: FormatName | str,
        summaries: SummaryService,
        limits: Sequence[tuple[int, Limits]] | None = None,
        shelf: Shelf | None = None,
    ) -> None:
        self.policy = policy
        self.config: PolicyConfig = policy.config
        self.counter = counter
        self.meter = meter
        self.format = format
        self.summaries = summaries
        self.shelf = shelf
        """The policy's store (recall originals, shared summaries); None: no recall."""
        if limits is None:
            limits = ((0, default_limits(policy.config)),)
        self._limits = tuple(limits)
        self.edits: list[Edit] = []
        """Every edit of this apply so far, in the order steps added them."""
        self._held: list[Edit] | None = None
        self._envelopes: list[tuple[tuple[object, ...], int, int]] = []
        self.window_cleared: Set[tuple[int | None, str | None]] | None = None
        """Set by the :class:`~ctxwin.Window` step: the ``(message_index, call_id)`` of
        every edit of step ``window`` in :attr:`edits` (None: no window step ran), so a
        step after it needs not look for them. The window's own set, which only grows while
        it resumes the same history (a new set otherwise): a step may memoize what it read
        under it by its identity (:class:`~ctxwin.CacheBreakpoints` does)."""
        self.changed: Sequence[Change] = ()
        """Set by a step that changes content an earlier request of the conversation sent
        as it was (:class:`~ctxwin.EditResults` under ``edit_latest: false``): each such
        change, as the first block changed and the last message of the first request that
        carried it, the same in every request. On a model that checks the prefix of the
        thinking blocks sent back, the :class:`~ctxwin.Window` step after it removes the
        thinking those changes invalidated (:mod:`ctxwin.steps._binding`). The step's own
        list, which only grows while it resumes the same history (a new list otherwise):
        a step after it reads only what it has not read of it."""

    # ------------------------------------------------------------- counting

    def count(self, text: str) -> int:
        """Tokens of ``text``, memoized by content: a result's whole text, counted once
        for its edit, is found again when the meter counts the request for the report."""
        return self.counter.count(text)

    def block_tokens(self, block: Block) -> int:
        return self.meter.block(block)

    def message_tokens(self, msg: Message) -> int:
        return self.meter.message(msg)

    def conversation_tokens(self, conv: Conversation) -> int:
        """Tokens of the whole request ``conv`` renders to."""
        return self.meter.conversation(conv)

    def envelope_tokens(self, conv: Conversation) -> int:
        """Tokens of what the request carries besides its messages (system, tools), counted
        once in the apply: the steps' conversations, and the request sent, carry the same
        envelope (the meter's own check of it walks the tool definitions, at every call)."""
        for hit in self._envelopes:  # the request as parsed, as repaired, as sent: 1 to 3
            if hit[0] is conv.envelope and hit[1] == conv.provider_prompt:
                return hit[2]
        tokens = self.meter.envelope(conv)
        del self._envelopes[3:]
        self._envelopes.insert(0, (conv.envelope, conv.provider_prompt, tokens))
        return tokens

    def limits(self, position: int | None = None) -> Limits:
        """The window's numbers in force at a message position (the latest when ``None``):
        they change only where usage calibration changed them, never for what came before."""
        schedule = self._limits
        if position is None or len(schedule) == 1:
            return schedule[-1][1] if position is None else schedule[0][1]
        return schedule[bisect.bisect_right([p for p, _ in schedule], position) - 1][1]

    def rules_for(self, tool: str) -> CompiledTool | None:
        """The policy's rules for a tool (its own, a matching glob's, ``*``'s), or None."""
        return self.policy.rules_for(tool)

    def recall_on(self, tool: str) -> bool:
        """Whether the originals of ``tool``'s shortened results are kept for recall."""
        if self.shelf is None:
            return False
        rules = self.policy.rules_for(tool)
        own = rules.rules.recall if rules is not None else None
        return own if own is not None else self.config.recall.enabled

    # ------------------------------------------------------------- edits

    def add_edit(self, edit: Edit) -> None:
        """Note an edit made now: it is logged, and listed in this request's report."""
        if self._held is not None:
            self._held.append(edit)
            return
        log_edit(edit)
        self.edits.append(edit)

    def add_edits(self, edits: Iterable[Edit]) -> None:
        """List edits made by an earlier request and found again in a memo (they were
        logged when they were made, so they are not logged again)."""
        self.edits.extend(edits)

    @contextmanager
    def collect(self) -> Iterator[list[Edit]]:
        """Hold the edits added inside the block in a list of their own, neither logged nor
        listed: a step that memoizes them with what it made logs them (:func:`log_edit`)
        and lists them (:meth:`add_edits`) once it keeps them."""
        held, self._held = self._held, []
        try:
            yield self._held
        finally:
            self._held = held


def default_limits(config: PolicyConfig) -> Limits:
    """The limits a config gives with no model known and no calibration."""
    window = config.context_window if isinstance(config.context_window, int) else 128_000
    w = config.window
    return Limits(window, *w.ceiling(window), w.drop_tokens(window))


@runtime_checkable
class Step(Protocol):
    """A step of the chain: takes a conversation and the context, returns a conversation.

    Steps never modify what they are given; they return new objects (``with_*`` methods).
    """

    def __call__(self, conversation: Conversation, context: Context, /) -> Conversation: ...


@runtime_checkable
class ResultStep(Protocol):
    """A step applied to each tool result where it enters the history (select, cap...).

    It must be deterministic in (result, info): the same result must come out the same in
    every request, which is what keeps the provider's prompt cache warm.
    """

    name: str

    def __call__(self, result: ToolResult, info: ResultInfo, context: Context, /) -> ToolResult: ...
