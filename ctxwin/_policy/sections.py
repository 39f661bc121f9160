"""The sections of a policy that stand on their own: ``repair:``, ``pricing:``, ``recall:``,
``store:``, and what every section shares (strict models, the bounds of numbers).
``schema.py`` assembles them into the defaults file and the tool files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ctxwin._core.repair_texts import (
    EMPTY_RESULT_TEXT,
    FIRST_USER_TEXT,
    LAST_USER_TEXT,
    MISSING_RESULT_TEXT,
)
from ctxwin._policy.yamltext import excerpt
from ctxwin.stores._base import MAX_TIMEOUT, MAX_TTL, url_problem

__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "MIN_CAP",
    "PRICING_TYPE",
    "RECALL_NOTE",
    "STORE_URL",
    "PricingConfig",
    "PricingSetting",
    "RecallConfig",
    "RepairConfig",
    "StoreConfig",
    "StrictModel",
]

MAX_COUNT = MAX_TTL
"""The largest count of tokens, bytes, rounds or requests (and of seconds a store keeps an
entry) a policy may give (the stores' own bound): far above any model, and small enough
that arithmetic in floats stays exact and cannot overflow (a 400-digit ``context_window``
raised ``OverflowError``)."""
MAX_SECONDS = MAX_TIMEOUT
"""The longest timeout (a day), the stores' own bound. Python's waits refuse more than
``threading.TIMEOUT_MAX`` (about 292 years on Linux, 49 days on Windows) with an
``OverflowError``."""

MIN_CAP = 24
"""The smallest cap: a truncation notice itself takes about 15 tokens."""


class StrictModel(BaseModel):
    """A policy section: unknown keys refused, values frozen and never coerced."""

    # strict: "4000" is not an integer, 300.0 not an integer, 1 not true (no coercion);
    # no inf or nan for a float
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


RECALL_NOTE = '[recall("{handle}") returns the whole {tool} result; lines or grep take part.]'
"""Said after a capped, selected or summarized result when recall is on and its template
has no ``{handle}``."""


SOME_TEXT: dict[str, Any] = {"type": "string", "pattern": "\\S"}
"""The JSON Schema of a repair text: some character other than a space."""


class RepairConfig(StrictModel):
    """What repair writes where a request needs something it lacks: each text a message or
    a result of its own, so none may be blank."""

    missing_result: str = Field(
        MISSING_RESULT_TEXT,
        description="The result of a call that has none (an interrupted call, a declined "
        "approval). Field: {tool}.",
        json_schema_extra=SOME_TEXT,
    )
    empty_result: str = Field(
        EMPTY_RESULT_TEXT,
        description="The text given to an empty result of a rebuilt round.",
        json_schema_extra=SOME_TEXT,
    )
    first_user: str = Field(
        FIRST_USER_TEXT,
        description="The user message put first where a format wants one (Anthropic).",
        json_schema_extra=SOME_TEXT,
    )
    last_user: str = Field(
        LAST_USER_TEXT,
        description="The user message put last where repair took away or moved up what "
        "ended the request (a request ending with the model's message asks for a prefill).",
        json_schema_extra=SOME_TEXT,
    )

    @field_validator("missing_result", "empty_result", "first_user", "last_user")
    @classmethod
    def _some_text(cls, value: str) -> str:
        """Each text becomes a message or a result of its own, and providers refuse a blank
        one (Anthropic: "text content blocks must be non-empty"; Gemini: an empty part)."""
        if not value.strip():
            raise ValueError(
                "must hold some text: providers refuse a blank message or result "
                f"(got {excerpt(value)})"
            )
        return value


class PricingConfig(StrictModel):
    """Prompt-cache prices relative to a plain input token (see ``ctxwin/data/pricing.yaml``)."""

    cache_write: float = Field(ge=0, description="A token written to the prompt cache.")
    cache_read: float = Field(ge=0, description="A token read from the prompt cache.")
    min_prefix: int = Field(
        0,
        ge=0,
        le=MAX_COUNT,
        description="The shortest prefix the provider caches (tokens); below it, none.",
    )


def _pricing_kind(value: object) -> str | None:
    """Which form of ``pricing:`` a value is meant as: a preset's name or prices of one's
    own; ``None`` (refused as neither) for anything else. Without it pydantic tried both
    and reported both, under the union's branch names (``pricing.str: must be a string``)."""
    if isinstance(value, str):
        return "preset"
    if isinstance(value, (Mapping, PricingConfig)):
        return "custom"
    return None


PRICING_TYPE = "pricing_type"
"""The pydantic error type of a ``pricing:`` that is neither a name nor a mapping."""

PricingSetting = Annotated[
    Annotated[str, Tag("preset")] | Annotated[PricingConfig, Tag("custom")],
    Discriminator(
        _pricing_kind,
        custom_error_type=PRICING_TYPE,
        custom_error_message="must be a preset name or a mapping {cache_write, cache_read, "
        "min_prefix}",
    ),
]
"""``pricing:``: a preset's name, or ``{cache_write, cache_read, min_prefix}``."""


def _shorthand(key: str) -> Any:
    def read(value: object) -> object:
        if isinstance(value, (bool, str)):
            return {key: value}
        return value

    return read


class RecallConfig(StrictModel):
    """Recall: the originals of shortened results kept in the store, and the ``recall`` tool
    that gives them back (``recall: true`` is short for ``recall: {enabled: true}``)."""

    enabled: bool = Field(False, description="Keep originals and put handles in the text.")
    max_tokens: int = Field(
        4000,
        ge=MIN_CAP,
        le=MAX_COUNT,
        description="The cap on the recall tool's own results when no rules name it.",
    )
    note: str = Field(
        RECALL_NOTE,
        description="Said after a capped, selected or summarized result whose template has "
        "no {handle}. Fields: {tool}, {call_id}, {handle}; it must quote {handle}.",
        json_schema_extra={"type": "string", "pattern": "\\{handle\\}"},
    )

    @model_validator(mode="before")
    @classmethod
    def _bool(cls, value: object) -> object:
        return _shorthand("enabled")(value)


STORE_URL: dict[str, Any] = {
    "type": "string",
    "pattern": "^(memory(://[\\s\\S]*)?|sqlite:///[^?][\\s\\S]*|rediss?://[\\s\\S]*"
    "|unix://([^/?#]*@)?/+[^/?#][\\s\\S]*)$",
}
"""The JSON Schema of a store URL, what :func:`~ctxwin.stores._base.url_problem` takes:
``memory`` (alone or with ``://``), a SQLite file, a Redis server, a Unix socket (its path
after ``unix://`` and an optional userinfo: no host)."""


class StoreConfig(StrictModel):
    """Where recall originals and the summary memo live (``store: URL`` is short for
    ``store: {url: URL}``)."""

    url: str = Field(
        "memory",
        description="memory (this process), sqlite:///path.db (one machine, many processes) "
        "or a Redis server (pip install 'ctxwin[redis]'): redis://host:port/db or "
        "rediss://host:port/db (TLS) for many machines, unix:///path/redis.sock?db=0 (a "
        "Unix socket) for this one.",
        json_schema_extra=STORE_URL,
    )
    ttl: float | None = Field(
        None, gt=0, le=MAX_COUNT, description="Seconds an entry lives (none: forever)."
    )
    max_bytes: int = Field(
        16 * 1024 * 1024,
        gt=0,
        le=MAX_COUNT,
        description="The largest value kept; larger ones are not stored.",
    )
    timeout: float = Field(
        0.5,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds a read or write may take before the store counts as down.",
    )

    @model_validator(mode="before")
    @classmethod
    def _url(cls, value: object) -> object:
        return _shorthand("url")(value)

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        problem = url_problem(value)  # the password masked
        if problem is not None:
            raise ValueError(problem)
        return value
