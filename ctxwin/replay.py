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

from ctxwin._core.check import problems_of
from ctxwin._core.conversation import Conversation
from ctxwin._engine import Policy
from ctxwin._report.data import ReplayResult, ReplayStats
from ctxwin.formats import Adapter, detect, get_adapter
from ctxwin.tokens._meter import TokenMeter

__all__ = ["ReplayResult", "ReplayStats", "replay", "request_points"]


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
    meter = TokenMeter(policy.counter, adapter.overheads)
    unmanaged = _Tally(meter, adapter)
    managed = _Tally(meter, adapter)
    for t in points:
        request = _prefix_body(body, adapter.container, t)
        unmanaged.add(adapter.parse(request))
        result = policy.apply(request, format=fmt)
        managed.add(result.conversation, result.request)
    counter = policy.counter
    return ReplayResult(name, fmt, managed.stats(), unmanaged.stats(), counter.name, counter.exact)


class _Tally:
    def __init__(self, meter: TokenMeter, adapter: Adapter) -> None:
        self.adapter = adapter
        self.meter = meter
        self.prev_items: list[object] = []
        self.prev_env: object = None
        self.requests = self.input = self.cached = self.peak = self.problems = 0

    def add(self, conv: Conversation, rendered: object | None = None) -> None:
        adapter = self.adapter
        body = rendered if rendered is not None else conv.source
        items = adapter.items_of(body)
        env = self.meter.envelope(conv)
        per_message = [self.meter.message(m) for m in conv.messages]
        total = env + sum(per_message)
        env_key = _envelope_key(body, adapter.container)
        cached = 0
        if self.requests and env_key == self.prev_env:
            cached = env
            for i, (a, b) in enumerate(zip(items, self.prev_items, strict=False)):
                if a is not b and a != b and adapter.unmarked(a) != adapter.unmarked(b):
                    break
                cached += per_message[i]
        self.requests += 1
        self.input += total
        self.cached += cached
        self.peak = max(self.peak, total)
        # Checked on the body as sent, parsed afresh: what the provider would see.
        sent = adapter.parse(body) if rendered is not None else conv
        self.problems += len(problems_of(sent, adapter))
        self.prev_items = list(items)
        self.prev_env = env_key

    def stats(self) -> ReplayStats:
        return ReplayStats(self.requests, self.input, self.cached, self.peak, self.problems)


def _envelope_key(body: object, container: str) -> object:
    if isinstance(body, Mapping):
        return {k: v for k, v in body.items() if k != container}
    return None
