"""The policy schema: what a defaults file and a tool file may say (pydantic models).

A policy is a folder of YAML files (or one file, or a dict): one defaults file (any file
without a top-level ``tool:`` key, conventionally ``defaults.yaml``) and one file per tool
(with ``tool:``, a name or a glob). Loading and compiling are in ``load.py`` and
``compile.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainValidator,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ctxwin._policy.sections import (
    MAX_COUNT,
    MAX_SECONDS,
    MIN_CAP,
    RECALL_NOTE,
    STORE_URL,
    PricingConfig,
    PricingSetting,
    RecallConfig,
    RepairConfig,
    StoreConfig,
    StrictModel,
)
from ctxwin._policy.yamltext import excerpt

__all__ = [
    "CEILINGS",
    "CROSS_KEY",
    "DEFAULT_NOTICE",
    "DEFAULT_PLACEHOLDER",
    "MAX_COUNT",
    "MAX_SECONDS",
    "MIN_CAP",
    "NOTICE_FIELDS",
    "PLACEHOLDER_FIELDS",
    "RECALL_NOTE",
    "RECALL_NOTE_FIELDS",
    "RECALL_PLACEHOLDER",
    "REPAIR_FIELDS",
    "PolicyConfig",
    "PricingConfig",
    "RecallConfig",
    "RepairConfig",
    "StoreConfig",
    "SummarizeConfig",
    "ToolFile",
    "ToolRules",
    "WindowConfig",
    "cross_key",
    "json_schema",
]

REPAIR_FIELDS = frozenset({"tool"})
PLACEHOLDER_FIELDS = frozenset({"tool", "call_id", "tokens", "handle"})
NOTICE_FIELDS = frozenset(
    {"tool", "call_id", "omitted_tokens", "total_tokens", "kept_tokens", "handle"}
)
RECALL_NOTE_FIELDS = frozenset({"tool", "call_id", "handle"})
DEFAULT_PLACEHOLDER = (
    "[{tool} result cleared to save context ({tokens} tokens). Call {tool} again if you need it.]"
)
DEFAULT_NOTICE = "[... {omitted_tokens} of {total_tokens} tokens of {tool} output truncated ...]"
RECALL_PLACEHOLDER = '[{tool} result cleared ({tokens} tokens). recall("{handle}") returns it.]'
"""The window's placeholder when recall is on and the policy keeps the default one."""


PositiveInt = Annotated[int, Field(gt=0, le=MAX_COUNT)]


def _context_window(value: object) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a positive integer or 'auto' (got {excerpt(value)})")
    if value <= 0:
        raise ValueError(f"must be greater than 0 (got {value!r})")
    if value > MAX_COUNT:
        raise ValueError(f"must be less than or equal to {MAX_COUNT} (got {excerpt(value)})")
    return value


ContextWindow = Annotated[
    int | Literal["auto"],
    PlainValidator(_context_window),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "exclusiveMinimum": 0, "maximum": MAX_COUNT},
                {"const": "auto"},
            ]
        }
    ),
]
"""Tokens the model accepts, or ``auto`` (from the request's model)."""
CEILINGS: dict[str, tuple[float, float]] = {"threshold": (0.6, 0.4), "cost": (0.95, 0.6)}
"""The default ``(trigger, target)`` by strategy. Under ``cost`` the rule clears for money
and the ceiling only stops a conversation the bound kept from jumping: a jump it forces is
made whatever it costs, so the ceiling sits near the window (on made-up SWE-agent traces
at 30k, 0.6 forced 10 of 132 conversations that never reach the window above 1.10x
unmanaged, 0.95 none, for the same bill over all of them). A policy that sets either value
gets the other's default under ``threshold`` (0.6, 0.4), as before."""


class WindowConfig(StrictModel):
    """When and how far old tool results are cleared (the sliding window)."""

    strategy: Literal["cost", "threshold"] = Field(
        "cost",
        description="'cost': clear old results when what they cost in cache reads reaches what "
        "re-writing the prompt after them costs (rent or buy), under the policy's pricing; "
        "'threshold': only by size. Over trigger, 'threshold' clears down to target and "
        "'cost' clears every eligible result (at least down to target).",
    )
    trigger: float | None = Field(
        None,
        gt=0,
        le=MAX_COUNT,
        description="Start clearing above this: a fraction of context_window (<= 1) or tokens. "
        "Default 0.6, or 0.95 under 'cost' when target is not set either (a ceiling: the "
        "cost rule clears for money, and a low ceiling forces costly jumps on short "
        "conversations).",
    )
    target: float | None = Field(
        None,
        gt=0,
        le=MAX_COUNT,
        description="Then clear down to this in one go (hysteresis): a fraction or tokens. "
        "Default 0.4, or 0.6 under 'cost' when trigger is not set either.",
    )
    drop_target: float | None = Field(
        None,
        ge=0,
        le=MAX_COUNT,
        description="With overflow: drop_oldest_rounds, drop old rounds down to this when "
        "clearing cannot fit the window: a fraction or tokens. Default: 0 under 'cost' (every "
        "round outside the kept ones: the drop re-writes everything after the first dropped "
        "message anyway, and each round dropped saves its reads on every later request; "
        "the drop goes on through the rest of its request), target under 'threshold'.",
    )
    max_overrun: float | None = Field(
        0.1,
        ge=0,
        description="Under 'cost', a jump made for money (not forced by trigger or the "
        "window) only when, were the conversation to end overrun_grace requests after it, "
        "the bill would stay within this fraction above the unedited history's: a jump just "
        "before the end does not pay back. What the result edits and earlier jumps saved is "
        "budget it may risk. null: no bound.",
    )
    overrun_grace: int = Field(
        2,
        ge=0,
        le=MAX_COUNT,
        description="Under 'cost', the requests after a jump made for money that "
        "max_overrun counts on: the reads the jump saves over them (up to half of "
        "max_overrun of the bill) are taken off its cost. A conversation that ends this many "
        "requests or more after its last jump stays within max_overrun; one that ends sooner "
        "may go up to about 1.5 times max_overrun above. Counted only once the agent has "
        "sent more than this many requests since the user's latest message (a conversation "
        "often ends right after the user speaks); before, the strict bound. 0: the strict "
        "bound, which also holds for a conversation that ends with the jump.",
    )
    keep_rounds: int = Field(
        2,
        ge=1,
        le=MAX_COUNT,
        description="The newest rounds (assistant turn + its results) never cleared.",
    )
    placeholder: str = Field(
        DEFAULT_PLACEHOLDER,
        description="Text of a cleared result. Fields: {tool}, {call_id}, {tokens}, {handle} "
        "(recall).",
    )
    clear_tool_inputs: bool = Field(
        False, description="Also shorten the arguments of the calls whose results are cleared."
    )
    clear_reasoning: bool = Field(
        False,
        description="Also drop the reasoning items (OpenAI Responses) of rounds the window "
        "clears, oldest first like results, and those of the answers (turns without calls) "
        "after them, with the round before; skipped when the round's calls or the answer's "
        "messages carry item ids (fc_..., msg_...), which tie them to their reasoning. "
        "On OpenAI those of earlier turns (before the latest user message) count nothing, "
        "as OpenAI drops them: they still go with their round, saving nothing.",
    )

    @field_validator("trigger", "target", "drop_target")
    @classmethod
    def _fraction_or_tokens(cls, value: float | None) -> float | None:
        """Up to 1 a value is a fraction of the window, above it a number of tokens: a
        ``target: 1.5`` was read as 1 token (clear everything)."""
        if value is not None and value > 1 and value != int(value):
            raise ValueError(
                f"a value above 1 is a number of tokens and must be whole (got {value!r}); "
                "a fraction of the window is at most 1"
            )
        return value

    def tokens(self, value: float, context_window: int) -> int:
        return int(value * context_window) if value <= 1 else int(value)

    def ceiling(self, context_window: int) -> tuple[int, int]:
        """``trigger`` and ``target`` in tokens, defaults resolved (see :data:`CEILINGS`)."""
        both_unset = self.trigger is None and self.target is None
        trigger, target = CEILINGS[self.strategy if both_unset else "threshold"]
        return (
            self.tokens(trigger if self.trigger is None else self.trigger, context_window),
            self.tokens(target if self.target is None else self.target, context_window),
        )

    def drop_tokens(self, context_window: int) -> int:
        """How far a forced drop goes, in tokens (``drop_target`` resolved)."""
        if self.drop_target is not None:
            return self.tokens(self.drop_target, context_window)
        return 0 if self.strategy == "cost" else self.ceiling(context_window)[1]


class SummarizeConfig(StrictModel):
    """Summarize a result through the user's summarizer when it is long."""

    over_tokens: PositiveInt = Field(description="Summarize results longer than this.")
    max_tokens: int = Field(
        ge=MIN_CAP,
        le=MAX_COUNT,
        description=(
            f"The summary's budget, passed to the summarizer (at least {MIN_CAP}: a tool "
            "without max_tokens is capped at it when no summary can be had)."
        ),
    )
    instructions: str = Field("", description="Passed to the summarizer as is.")
    timeout: float = Field(
        30.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds to wait for a summary before falling back to the cap.",
    )


class ToolRules(StrictModel):
    """What to do with one tool's results (a tool file without its ``tool:`` key)."""

    select: str | None = Field(
        None, description="JMESPath over the result parsed as JSON; keeps only what it selects."
    )
    max_tokens: int | None = Field(
        None,
        ge=MIN_CAP,
        le=MAX_COUNT,
        description=(
            f"Cap results' text at this many tokens, notice included (at least {MIN_CAP}); "
            "images and files are kept, and the edit says when they take a result over."
        ),
    )
    truncate: Literal["head", "tail", "head_tail"] = Field(
        "head_tail", description="Which part of a capped result to keep (JSON: whole items)."
    )
    notice: str = Field(
        DEFAULT_NOTICE,
        description=(
            "Truncation notice. Fields: {tool}, {call_id}, {omitted_tokens}, {total_tokens}, "
            "{kept_tokens}, {handle} (recall)."
        ),
    )
    summarize: SummarizeConfig | None = Field(
        None, description="Summarize long results through the summarizer you pass to the policy."
    )
    placeholder: str | None = Field(
        None,
        description="This tool's placeholder when the window clears a result. Fields: {tool}, "
        "{call_id}, {tokens}, {handle} (recall).",
    )
    window: Literal["clear", "keep"] = Field(
        "clear", description="'keep': the window never clears this tool's results."
    )
    edit_latest: bool = Field(
        True,
        description="Apply select/summarize/cap to the latest round too (false: send it raw).",
    )
    recall: bool | None = Field(
        None,
        description="Keep the originals of this tool's shortened results for the recall tool "
        "(default: the defaults' recall).",
    )


class ToolFile(ToolRules):
    """A per-tool policy file."""

    tool: str = Field(description="The tool's name, or a glob such as 'search_*'.")


CROSS_KEY = "cross_key"
"""The pydantic error type of a check between keys; its ``ctx["path"]`` is the key path
(from the model that raised it) the error is about, for its line."""


def cross_key(path: tuple[str, ...], message: str) -> PydanticCustomError:
    """A model validator's error about the key at ``path`` (the message names the keys)."""
    return PydanticCustomError(CROSS_KEY, message, {"path": path})


def _or_shorthand(short: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """A field's JSON Schema that also takes the shorthand its validator reads (``recall:
    true``, ``store: URL``; ``server_state: yes``, which YAML reads as true): what the
    schema accepts is what loading does."""

    def widen(schema: dict[str, Any]) -> None:
        full = {k: schema.pop(k) for k in list(schema) if k not in _ANNOTATIONS}
        schema["anyOf"] = [dict(short), full]

    return widen


_ANNOTATIONS = frozenset({"title", "description", "default"})
"""The keys of a field's schema that describe it rather than constrain its value."""


class PolicyConfig(StrictModel):
    """The defaults file (or a whole policy in one file/dict)."""

    context_window: ContextWindow = Field(
        128_000,
        description="Tokens the model accepts; 'auto': from the request's model (its profile "
        "in ctxwin/data/models.yaml).",
    )
    pricing: PricingSetting = Field(
        "auto",
        description="Prompt-cache prices: a preset (anthropic, anthropic-1h, openai, openai-4o, "
        "openai-4.1, openai-gpt-5.6, gemini, none), {cache_write, cache_read, min_prefix}, or "
        "'auto': the request's model's preset (anthropic when the model is unknown).",
    )
    cache_breakpoints: Literal["keep", "auto"] = Field(
        "keep",
        description="'keep': the request's own cache markers are kept on edited blocks; 'auto': "
        "ctxwin places them (the end of the prefix its window keeps, and the last message).",
    )
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
        json_schema_extra=_or_shorthand({"type": "boolean"}),
    )
    repair: RepairConfig = Field(default_factory=RepairConfig)
    recall: RecallConfig = Field(
        default_factory=RecallConfig,
        description="true: keep the originals of shortened results for the recall tool.",
        json_schema_extra=_or_shorthand({"type": "boolean"}),
    )
    store: StoreConfig = Field(
        default_factory=StoreConfig,
        description="The store URL (memory, sqlite:///path.db, redis://host:port/db, "
        "rediss://host:port/db for TLS, unix:///path/redis.sock?db=0 for a Unix socket), or "
        "{url, ttl, max_bytes, timeout}.",
        json_schema_extra=_or_shorthand(STORE_URL),
    )

    @field_validator("server_state", mode="before")
    @classmethod
    def _yaml_yes_no(cls, value: object) -> object:
        """YAML reads the documented ``server_state: yes`` (and no, on, off, true, false)
        unquoted as a boolean: true is 'yes', false is 'no'."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        return value

    @model_validator(mode="after")
    def _target_below_trigger(self) -> PolicyConfig:
        w = self.window
        window = self.context_window if isinstance(self.context_window, int) else 1_000_000
        trigger, target = w.ceiling(window)
        if target >= trigger:
            if w.target is None:  # the default target, above the trigger written
                default = CEILINGS["threshold"][1]
                raise cross_key(
                    ("window", "trigger"),
                    f"window.target (default {default}) must be below window.trigger",
                )
            raise cross_key(("window", "target"), "window.target must be below window.trigger")
        if w.drop_target is not None and w.drop_tokens(window) > target:
            raise cross_key(
                ("window", "drop_target"), "window.drop_target must not be above window.target"
            )
        return self

    @field_validator("pricing")
    @classmethod
    def _known_preset(cls, value: str | PricingConfig) -> str | PricingConfig:
        if isinstance(value, str):
            from ctxwin._policy.tables import unknown_preset

            problem = unknown_preset(value, auto=True)
            if problem is not None:
                raise ValueError(problem)
        return value


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
