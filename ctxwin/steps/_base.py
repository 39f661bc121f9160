"""What every step sees: the protocols, the per-apply context, and edit records."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from ctxwin._model import Block, Conversation, Message, ToolResult
from ctxwin.formats import Adapter

if TYPE_CHECKING:
    from ctxwin._engine import EngineMemo
    from ctxwin._policy import CompiledPolicy, CompiledTool, PolicyConfig
    from ctxwin.steps.summarize import SummaryRunner
    from ctxwin.steps.window import FoldState
    from ctxwin.tokens import MemoCounter

logger = logging.getLogger("ctxwin")

StepName: TypeAlias = Literal[
    "select", "summarize", "cap", "window", "clear_input", "drop", "repair"
]


@dataclass(frozen=True, slots=True)
class Edit:
    """One change a step made to the request.

    ``tokens_before``/``tokens_after`` are the tokens of the edited content (a result's
    text, a call's arguments, a dropped message); ``fallback`` names what went wrong when a
    step could not do what the policy asked (e.g. ``summarizer_timeout``) and fell back.
    """

    step: StepName | str
    tool: str
    call_id: str | None
    tokens_before: int
    tokens_after: int
    fallback: str | None = None
    note: str | None = None
    message_index: int | None = None
    chars_before: int = 0
    chars_after: int = 0

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "tool": self.tool,
            "call_id": self.call_id,
            "message_index": self.message_index,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
            "fallback": self.fallback,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class ResultInfo:
    """What a result step knows about the result it edits."""

    tool: str
    call_id: str | None
    rules: CompiledTool | None
    latest: bool
    """Whether the result belongs to the latest round."""
    message_index: int | None


class Context:
    """Everything a step needs for one apply: the policy, the counter, the memo, the adapter.

    Counting goes through :meth:`count` (memoized by content), :meth:`block_tokens` and
    :meth:`message_tokens` (memoized by identity), so nothing is counted twice.
    """

    def __init__(
        self,
        *,
        policy: CompiledPolicy,
        counter: MemoCounter,
        adapter: Adapter,
        memo: EngineMemo,
        summaries: SummaryRunner,
    ) -> None:
        self.policy = policy
        self.config: PolicyConfig = policy.config
        self.counter = counter
        self.adapter = adapter
        self.memo = memo
        self.summaries = summaries
        self.meter = memo.meter(counter, adapter)
        self.new_edits: list[Edit] = []
        self.sink: list[Edit] | None = None
        self.result_edit_lists: tuple[list[tuple[Edit, ...]], int] = ([], 0)
        """Edits of the per-result steps, per message, for the first n messages of this
        request (memoized ones included; the list only grows, so n pins this request)."""
        self.fold: tuple[Conversation, FoldState, int, int, int, int] | None = None
        """The window's fold as of this apply: (its input, state, and how many clearings,
        drops, events and reasoning drops it had made then)."""
        self.over_budget: int | None = None
        self.window_output: tuple[Conversation, int] | None = None
        """The window's output and its total tokens, so later steps need not recount."""

    # ------------------------------------------------------------- counting

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def block_tokens(self, block: Block) -> int:
        return self.meter.block(block)

    def message_tokens(self, msg: Message) -> int:
        return self.meter.message(msg)

    def conversation_tokens(self, conv: Conversation) -> int:
        """Tokens of the whole request ``conv`` renders to."""
        return self.meter.conversation(conv)

    def envelope_tokens(self, source: object) -> int:
        """Tokens of what the request carries besides its messages (system, tools)."""
        return self.meter.envelope(source)

    # ------------------------------------------------------------- edits

    def add_edit(self, edit: Edit) -> None:
        """Note an edit made by a result step (collected with the result it belongs to)."""
        if self.sink is not None:
            self.sink.append(edit)
        else:
            self.record(edit)

    def record(self, edit: Edit) -> None:
        """Note an edit made for the first time (it is logged; memoized edits are not)."""
        self.new_edits.append(edit)
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
            },
        )


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
