"""The data of reports: per tool, per round, and replays. Renderings are elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxwin._core.records import Edit, Fix

__all__ = [
    "READ_PRICE",
    "SCHEMA_VERSION",
    "WRITE_PRICE",
    "ReplayResult",
    "ReplayStats",
    "ReportData",
    "RequestFigures",
    "RoundStats",
    "ToolReplay",
    "ToolStats",
]

SCHEMA_VERSION = 1
"""Version of the JSON schema of :meth:`Report.to_dict` (see :meth:`Report.to_json`)."""
WRITE_PRICE = 1.25
READ_PRICE = 0.1


@dataclass(frozen=True, slots=True)
class ToolStats:
    """One tool in the request: its calls, and its results' tokens as parsed (before) and
    as sent (after)."""

    tool: str
    calls: int
    """The calls of the tool in the request."""
    tokens_before: int
    tokens_after: int
    share: float
    """Fraction of the request (after) that this tool's results take."""
    repaired: int = 0
    """Tokens repair added to the tool's results (a result written for an interrupted
    call, an empty one filled), less those it took away (a duplicate result): the policy's
    steps started from ``tokens_before + repaired``."""

    @property
    def saved(self) -> int:
        """What the policy's steps saved on the tool's results (repair's change apart):
        ``tokens_before + repaired - tokens_after``."""
        return self.tokens_before + self.repaired - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "tokens_before": self.tokens_before,
            "repaired": self.repaired,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
            "share": round(self.share, 4),
        }


@dataclass(frozen=True, slots=True)
class RoundStats:
    """One round (assistant turn with calls, plus results) before and after."""

    index: int
    message_index: int | None
    tools: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    state: str
    """What the policy did to the round: ``kept``, ``edited`` (some result cut, selected or
    cleared) or ``dropped``."""
    repaired: int = 0
    """Tokens repair added to the round (a result written for an interrupted call), less
    those it took away (a result sent twice: the duplicate counts in the round of the call
    it repeats, in its message of its own too): ``tokens_after`` of a kept round is
    ``tokens_before + repaired``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "message_index": self.message_index,
            "tools": list(self.tools),
            "tokens_before": self.tokens_before,
            "repaired": self.repaired,
            "tokens_after": self.tokens_after,
            "state": self.state,
        }


@dataclass(frozen=True, slots=True)
class ReplayStats:
    """The replay metrics of one way of sending a trace, priced: ``write_price`` per token
    not read from the cache (written to it), ``read_price`` per token read from it.

    A sum (``a + b``) of stats priced apart (traces of models with other cache prices) has
    no single price: its ``cost`` is the sum of their costs, and its prices are ``a``'s."""

    requests: int
    input_tokens: int
    cached_tokens: int
    peak: int
    problems: int
    write_price: float = WRITE_PRICE
    read_price: float = READ_PRICE
    cost: float | None = None
    """The effective cost when it is not the prices times the tokens (a sum of stats priced
    apart); None: computed from them."""

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens

    @property
    def effective_cost(self) -> float:
        if self.cost is not None:
            return self.cost
        return self.write_price * self.uncached_tokens + self.read_price * self.cached_tokens

    def __add__(self, other: ReplayStats) -> ReplayStats:
        same = (self.write_price, self.read_price) == (other.write_price, other.read_price)
        return ReplayStats(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            max(self.peak, other.peak),
            self.problems + other.problems,
            self.write_price,
            self.read_price,
            None
            if same and self.cost is None and other.cost is None
            else self.effective_cost + other.effective_cost,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "effective_cost": round(self.effective_cost, 1),
            "peak": self.peak,
            "problems": self.problems,
        }


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """One request of a replay: input and cached tokens, unmanaged, managed, optimal."""

    unmanaged: tuple[int, int]
    managed: tuple[int, int]
    optimum: tuple[int, int] | None = None
    jump: bool = False
    """Whether the managed window jumped (cleared more) at this request."""


@dataclass(frozen=True, slots=True)
class ToolReplay:
    """One tool's results over a whole replay: their tokens summed over every request
    sent, unmanaged (before) and under the policy (after)."""

    tool: str
    calls: int
    tokens_before: int
    tokens_after: int

    def to_dict(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """A trace replayed unmanaged, under a policy, and (if asked) at the optimum of the
    policy's family."""

    name: str
    format: str
    managed: ReplayStats
    unmanaged: ReplayStats
    counter: str = ""
    """The tokenizer that counted, and whether it is the one the policy asked for."""
    exact: bool = True
    optimum: ReplayStats | None = None
    requests_detail: tuple[RequestFigures, ...] = ()
    context_window: int = 0
    tools: tuple[ToolReplay, ...] = ()
    """Per tool, the tokens of its results over every request, before and after."""
    notes: tuple[str, ...] = ()
    """The notes of the last managed request's report (see :attr:`ctxwin.Report.notes`);
    and, with the optimum, the replay's own: a window that cleared part of a round, where
    the optimum's family clears whole rounds, may pay less than it."""

    @property
    def cost_ratio(self) -> float:
        u = self.unmanaged.effective_cost
        return self.managed.effective_cost / u if u else 1.0

    @property
    def optimum_ratio(self) -> float | None:
        """Managed cost over the optimum's (``None`` without an optimum)."""
        if self.optimum is None:
            return None
        o = self.optimum.effective_cost
        return self.managed.effective_cost / o if o else 1.0

    @property
    def peak_ratio(self) -> float:
        return self.managed.peak / self.unmanaged.peak if self.unmanaged.peak else 1.0

    def to_dict(self) -> dict[str, object]:
        return {
            "trace": self.name,
            "format": self.format,
            "managed": self.managed.to_dict(),
            "unmanaged": self.unmanaged.to_dict(),
            "counter": {"name": self.counter, "exact": self.exact},
            "cost_ratio": round(self.cost_ratio, 4),
            "peak_ratio": round(self.peak_ratio, 4),
            "optimum": None if self.optimum is None else self.optimum.to_dict(),
            "optimum_ratio": None if self.optimum_ratio is None else round(self.optimum_ratio, 4),
            "pricing": {
                "cache_write": self.managed.write_price,
                "cache_read": self.managed.read_price,
            },
            "tools": [t.to_dict() for t in self.tools],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ReportData:
    """What an apply did, in tokens (the data of :class:`~ctxwin.Report`, which adds the
    renderings).

    ``tokens_before``/``tokens_after`` count the whole request (messages, system prompt,
    tool definitions, per-message overhead). ``counter`` names the tokenizer that counted and
    ``exact`` whether it is the one the policy asked for.
    """

    format: str
    counter: str
    exact: bool
    context_window: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    tools: tuple[ToolStats, ...]
    rounds: tuple[RoundStats, ...]
    edits: tuple[Edit, ...]
    fixes: tuple[Fix, ...] = ()
    window_events: int = 0
    over_budget: bool = False
    notes: tuple[str, ...] = field(default=())
    calibration: float = 1.0
    """The ratio of the provider's counts to ctxwin's the window used (1.0: none learned)."""
    breakpoints: tuple[tuple[int, int], ...] = ()
    """The cache breakpoints of the request as sent: (message position, tokens up to and
    including that message)."""

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def provider_tokens(self) -> float:
        """The request's tokens as the provider counts them (``tokens_after`` times
        ``calibration``): what ``over_budget`` is decided on."""
        return self.tokens_after * self.calibration

    @property
    def window_share(self) -> float:
        """The share of the context window the request takes as the provider counts it."""
        return self.provider_tokens / self.context_window

    @property
    def fallbacks(self) -> tuple[Edit, ...]:
        return tuple(e for e in self.edits if e.fallback)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (stable schema, see ``version``)."""
        return {
            "version": SCHEMA_VERSION,
            "format": self.format,
            "counter": {"name": self.counter, "exact": self.exact},
            "context_window": self.context_window,
            "tokens": {
                "before": self.tokens_before,
                "after": self.tokens_after,
                "saved": self.saved,
                "window_share": round(self.window_share, 4),
            },
            "messages": {"before": self.messages_before, "after": self.messages_after},
            "over_budget": self.over_budget,
            "window_events": self.window_events,
            "tools": [t.to_dict() for t in self.tools],
            "rounds": [r.to_dict() for r in self.rounds],
            "edits": [e.to_dict() for e in self.edits],
            "fixes": [f.to_dict() for f in self.fixes],
            "notes": list(self.notes),
            "calibration": self.calibration,
            "breakpoints": [{"message": m, "tokens_before": t} for m, t in self.breakpoints],
        }
