"""Replay a trace request by request: what the user pays, with and without a policy.

At every point ``t`` where the next message is the model's (and at the end of the trace),
the agent sends ``request_t``. Unmanaged, that is ``history[:t]``; managed, it is
``policy.apply(history[:t]).request``. For each, the replay adds up:

- ``input_tokens``: the tokens of every request;
- ``cached_tokens``: the tokens each request shares with the previous one's prefix (the
  longest common prefix of rendered messages, plus the unchanged system prompt and tools):
  what a prompt cache reuses;
- ``effective_cost`` = 1.25 x uncached + 0.1 x cached, in input-token units (Anthropic's
  cache-write and cache-read prices relative to plain input);
- ``peak``: the largest request;
- ``problems``: pairing problems a provider would reject (must be 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxwin._engine import Policy
from ctxwin._meter import TokenMeter
from ctxwin._problems import problems_of
from ctxwin.formats import detect, get_adapter

WRITE_PRICE = 1.25
READ_PRICE = 0.1


@dataclass(frozen=True, slots=True)
class ReplayStats:
    """The replay metrics of one way of sending a trace."""

    requests: int
    input_tokens: int
    cached_tokens: int
    peak: int
    problems: int

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens

    @property
    def effective_cost(self) -> float:
        return WRITE_PRICE * self.uncached_tokens + READ_PRICE * self.cached_tokens

    def __add__(self, other: ReplayStats) -> ReplayStats:
        return ReplayStats(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            max(self.peak, other.peak),
            self.problems + other.problems,
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


ZERO = ReplayStats(0, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """A trace replayed unmanaged and under a policy."""

    name: str
    format: str
    managed: ReplayStats
    unmanaged: ReplayStats
    counter: str = ""
    """The tokenizer that counted, and whether it is the one the policy asked for."""
    exact: bool = True

    @property
    def cost_ratio(self) -> float:
        u = self.unmanaged.effective_cost
        return self.managed.effective_cost / u if u else 1.0

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
        }


def request_points(body: object, format: str | None = None) -> list[int]:
    """Where the agent sends a request: before each model turn, and at the end."""
    adapter = get_adapter(format or detect(body))
    conv = adapter.parse(body)
    points = [
        i
        for i, m in enumerate(conv.messages)
        if i > 0 and m.role == "assistant" and conv.messages[i - 1].role != "assistant"
    ]
    n = len(conv.messages)
    if not points or points[-1] != n:
        points.append(n)
    return points


def _prefix_body(body: object, container: str, t: int) -> object:
    if isinstance(body, Mapping):
        items = body[container]
        return {**body, container: items[:t]}
    assert isinstance(body, Sequence)
    return list(body[:t])


def replay(
    body: object, policy: Policy | None, *, format: str | None = None, name: str = "trace"
) -> ReplayResult:
    """Replay ``body`` (a request holding a whole trace) unmanaged and under ``policy``."""
    fmt = format or detect(body)
    adapter = get_adapter(fmt)
    body = adapter.listed(body)
    points = request_points(body, fmt)
    policy = policy if policy is not None else Policy(format=fmt)
    meter = TokenMeter(policy.counter, adapter)
    unmanaged = _Tally(meter)
    managed = _Tally(meter)
    for t in points:
        request = _prefix_body(body, adapter.container, t)
        unmanaged.add(adapter.parse(request))
        result = policy.apply(request, format=fmt)
        managed.add(result.conversation, result.request)
    counter = policy.counter
    return ReplayResult(name, fmt, managed.stats(), unmanaged.stats(), counter.name, counter.exact)


class _Tally:
    def __init__(self, meter: TokenMeter) -> None:
        self.meter = meter
        self.prev_items: list[object] = []
        self.prev_env: object = None
        self.requests = self.input = self.cached = self.peak = self.problems = 0

    def add(self, conv: object, rendered: object | None = None) -> None:
        from ctxwin._model import Conversation

        assert isinstance(conv, Conversation)
        adapter = self.meter.adapter
        body = rendered if rendered is not None else conv.source
        items = adapter.items_of(body)
        env = self.meter.envelope(conv.source)
        per_message = [self.meter.message(m) for m in conv.messages]
        total = env + sum(per_message)
        env_key = _envelope_key(body, adapter.container)
        cached = 0
        if self.requests and env_key == self.prev_env:
            cached = env
            for i, (a, b) in enumerate(zip(items, self.prev_items, strict=False)):
                if a is not b and a != b:
                    break
                cached += per_message[i]
        self.requests += 1
        self.input += total
        self.cached += cached
        self.peak = max(self.peak, total)
        # Checked on the body as sent, parsed afresh: what the provider would see.
        sent = adapter.parse(body) if rendered is not None else conv
        self.problems += sum(1 for p in problems_of(sent) if p.severity == "error")
        self.prev_items = list(items)
        self.prev_env = env_key

    def stats(self) -> ReplayStats:
        return ReplayStats(self.requests, self.input, self.cached, self.peak, self.problems)


def _envelope_key(body: object, container: str) -> object:
    if isinstance(body, Mapping):
        return {k: v for k, v in body.items() if k != container}
    return None
