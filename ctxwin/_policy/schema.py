"""The policy schema: what a defaults file and a tool file may say (pydantic models).

A policy is a folder of YAML files (or one file, or a dict): one defaults file (any file
without a top-level ``tool:`` key, conventionally ``defaults.yaml``) and one file per tool
(with ``tool:``, a name or a glob). Loading and compiling are in ``load.py`` and
``compile.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxwin._core.repair import EMPTY_RESULT_TEXT, FIRST_USER_TEXT, MISSING_RESULT_TEXT

__all__ = [
    "DEFAULT_NOTICE",
    "DEFAULT_PLACEHOLDER",
    "MIN_CAP",
    "NOTICE_FIELDS",
    "PLACEHOLDER_FIELDS",
    "REPAIR_FIELDS",
    "PolicyConfig",
    "RepairConfig",
    "SummarizeConfig",
    "ToolFile",
    "ToolRules",
    "WindowConfig",
    "json_schema",
]

REPAIR_FIELDS = frozenset({"tool"})
PLACEHOLDER_FIELDS = frozenset({"tool", "call_id", "tokens"})
NOTICE_FIELDS = frozenset({"tool", "call_id", "omitted_tokens", "total_tokens", "kept_tokens"})
DEFAULT_PLACEHOLDER = (
    "[{tool} result cleared to save context ({tokens} tokens). Call {tool} again if you need it.]"
)
DEFAULT_NOTICE = "[... {omitted_tokens} of {total_tokens} tokens of {tool} output truncated ...]"

PositiveInt = Annotated[int, Field(gt=0)]
MIN_CAP = 24
"""The smallest cap: a truncation notice itself takes about 15 tokens."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WindowConfig(_Model):
    """When and how far old tool results are cleared (the sliding window)."""

    trigger: float = Field(
        0.6,
        gt=0,
        description="Start clearing above this: a fraction of context_window (<= 1) or tokens.",
    )
    target: float = Field(
        0.4,
        gt=0,
        description="Then clear down to this in one go (hysteresis): a fraction or tokens.",
    )
    keep_rounds: int = Field(
        2, ge=1, description="The newest rounds (assistant turn + its results) never cleared."
    )
    placeholder: str = Field(
        DEFAULT_PLACEHOLDER,
        description="Text of a cleared result. Fields: {tool}, {call_id}, {tokens}.",
    )
    clear_tool_inputs: bool = Field(
        False, description="Also shorten the arguments of the calls whose results are cleared."
    )
    clear_reasoning: bool = Field(
        False,
        description="Also drop the reasoning items (OpenAI Responses) of rounds the window "
        "clears, oldest first like results; skipped when the round's calls carry item ids.",
    )

    def tokens(self, value: float, context_window: int) -> int:
        return int(value * context_window) if value <= 1 else int(value)


class SummarizeConfig(_Model):
    """Summarize a result through the user's summarizer when it is long."""

    over_tokens: PositiveInt = Field(description="Summarize results longer than this.")
    max_tokens: PositiveInt = Field(description="The summary's budget, passed to the summarizer.")
    instructions: str = Field("", description="Passed to the summarizer as is.")
    timeout: float = Field(
        30.0, gt=0, description="Seconds to wait for a summary before falling back to the cap."
    )


class ToolRules(_Model):
    """What to do with one tool's results (a tool file without its ``tool:`` key)."""

    select: str | None = Field(
        None, description="JMESPath over the result parsed as JSON; keeps only what it selects."
    )
    max_tokens: int | None = Field(
        None,
        ge=MIN_CAP,
        description=f"Cap results at this many tokens, notice included (at least {MIN_CAP}).",
    )
    truncate: Literal["head", "tail", "head_tail"] = Field(
        "head_tail", description="Which part of a capped result to keep."
    )
    notice: str = Field(
        DEFAULT_NOTICE,
        description=(
            "Truncation notice. Fields: {tool}, {call_id}, {omitted_tokens}, {total_tokens}, "
            "{kept_tokens}."
        ),
    )
    summarize: SummarizeConfig | None = Field(
        None, description="Summarize long results through the summarizer you pass to the policy."
    )
    placeholder: str | None = Field(
        None, description="This tool's placeholder when the window clears a result."
    )
    window: Literal["clear", "keep"] = Field(
        "clear", description="'keep': the window never clears this tool's results."
    )
    edit_latest: bool = Field(
        True,
        description="Apply select/summarize/cap to the latest round too (false: send it raw).",
    )


class ToolFile(ToolRules):
    """A per-tool policy file."""

    tool: str = Field(description="The tool's name, or a glob such as 'search_*'.")


class RepairConfig(_Model):
    """What repair writes where a request needs something it lacks."""

    missing_result: str = Field(
        MISSING_RESULT_TEXT,
        description="The result of a call that has none (an interrupted call, a declined "
        "approval). Field: {tool}.",
    )
    empty_result: str = Field(
        EMPTY_RESULT_TEXT, description="The text given to an empty result of a rebuilt round."
    )
    first_user: str = Field(
        FIRST_USER_TEXT,
        description="The user message put first where a format wants one (Anthropic).",
    )


class PolicyConfig(_Model):
    """The defaults file (or a whole policy in one file/dict)."""

    context_window: PositiveInt = Field(128_000, description="Tokens the model accepts.")
    tokenizer: str = Field(
        "o200k_base",
        description="A tiktoken encoding (o200k_base, cl100k_base), 'approx', or a counter "
        "name passed to load_policy(counters=...).",
    )
    window: WindowConfig = Field(default_factory=WindowConfig)
    overflow: Literal["drop_oldest_rounds", "error"] = Field(
        "drop_oldest_rounds",
        description="Still over context_window after the window: drop whole rounds from the "
        "oldest, or raise BudgetExceeded.",
    )
    tools: dict[str, ToolRules] = Field(
        default_factory=dict,
        description="Tool rules by name or glob; '*' applies to any tool without its own rules.",
    )
    server_state: Literal["auto", "yes", "no"] = Field(
        "auto",
        description="Whether calls may live on the provider's side, so a result without its "
        "call in the request is kept: 'auto' when the body says so (previous_response_id, "
        "conversation) or an integration knows, 'yes' always, 'no' never.",
    )
    repair: RepairConfig = Field(default_factory=RepairConfig)

    @model_validator(mode="after")
    def _target_below_trigger(self) -> PolicyConfig:
        w = self.window
        if w.tokens(w.target, self.context_window) >= w.tokens(w.trigger, self.context_window):
            raise ValueError("window.target must be below window.trigger")
        return self


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a policy file: a defaults file or a tool file."""
    defaults = PolicyConfig.model_json_schema()
    tool = ToolFile.model_json_schema()
    defs = {**defaults.pop("$defs", {}), **tool.pop("$defs", {})}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ctxwin policy file",
        "anyOf": [defaults, tool],
        "$defs": defs,
    }
