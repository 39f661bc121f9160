"""The replay's cache model against the bills real runs were sent: their recorded usage.

Usage: python benchmarks/real_bills.py [--openhands SRC] [--claude SRC] [--per-run]
                                       [--policy FILE] [--window 30000]

``ctxwin replay`` and ``cost_window.py`` price a request as the issue's setup does: what the
previous request sent and this one sends again, message for message, is read from the cache;
the rest is written. Some agents' logs record what the provider counted for each request
they sent (input, cache reads, cache writes), so that model can be checked against real
bills:

- ``--openhands``: OpenHands event streams (``agent-logs/*.json``), each response's usage as
  LiteLLM gave it for a Claude model (read by :func:`ctxwin.read_usage`);
- ``--claude``: Claude Code session logs (``*.jsonl``), the usage of each API message.

Codex CLI rollouts record a ``token_count`` per model call too, but the provider's input
holds what the logs do not (the results of server-side web searches) and leaves out what
ctxwin counts (the reasoning items of earlier turns, which OpenAI drops), so they are not
compared here (``benchmarks/README.md``, stop 32, has the one session that could be).

Each log is turned into its request body by the converter of ``benchmarks/`` that the cost
figures used, and replayed unmanaged (no policy edits anything: the agents sent their
histories whole). Request ``k`` of the replay is matched with the ``k``-th usage the log
recorded. For each set it prints:

- the fit of the provider's input tokens on ctxwin's count of the same request, ``a + b x``:
  ``b`` is the provider's tokenizer against ctxwin's (o200k), ``a`` what the log leaves out
  (tool definitions, and Claude Code's system prompt), R² how well one tracks the other. A
  run with R² under :data:`ALIGNED` is taken as not matched and named;
- the cache: what share of the previous request's input the provider read from its cache,
  against the share the model reads (the whole previous request, less what changed), and
  the requests where the provider read less than half of it (a cache lost: Anthropic's
  5-minute lifetime ran out while a person or a long command took its time);
- the bill at the set's prices, from the second request on (the first one's cache depends on
  runs before it): the model's, in the provider's tokens (``a + b x``), against the one the
  provider's counts give under the same formula, and the bill the provider actually sent
  (Anthropic bills the uncached part after the last cache breakpoint at the base price, not
  as a write);
- what a policy (``--policy``, or issue 10's setup at ``--window`` tokens) pays against the
  unmanaged history, in ctxwin's tokens (the logs' messages only), with the model's cache
  and with the caches the provider lost (nothing read at those requests, for both), and
  what it would pay were its cost rule told which requests find the cache cold
  (:func:`cold_jumps`: a jump there re-writes nothing more, so it clears everything).

The figures in ``benchmarks/README.md`` (stop 32) use the 65 OpenHands runs and the Claude
Code sessions of stop 31 (sources in that README); they are not bundled.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import from_claude_sessions as claude
import from_openhands_events as openhands
from _convert import json_lines
from cost_window import policy_for

import ctxwin
from ctxwin._policy.tables import Pricing, pricing_presets
from ctxwin.replay import replay
from ctxwin.steps import _fold

__all__ = ["Run", "claude_runs", "compare", "fit", "main", "openhands_runs"]

ALIGNED = 0.9
"""A run whose provider counts track ctxwin's with an R² under this is taken as not matched
request for request (a log that lost turns, or a different conversation)."""

LOST = 0.5
"""A request that read less than this share of the previous request's input from the cache
lost it."""


@dataclass
class Run:
    """One conversation a log holds: its request body, and the usage of each request it sent,
    in order."""

    name: str
    body: dict[str, Any]
    usages: list[ctxwin.Usage]


@dataclass
class Compared:
    """One run's figures (see the module)."""

    name: str
    requests: int
    slope: float
    envelope: float
    r2: float
    real_read: int
    real_previous: int
    model_read: int
    model_previous: int
    lost: int
    relost: float
    """What the lost caches cost: the previous request's input written again, not read."""
    model_bill: float
    real_bill: float
    billed: float
    policy: tuple[float, float, float, float]
    """Unmanaged and the policy's bills with the model's cache, then with the lost caches."""
    told: float
    """The policy's bill with the lost caches, told where they were lost."""


def openhands_runs(src: Path) -> Iterator[Run]:
    """The OpenHands event streams under ``src``, with each response's usage."""
    for path in sorted(src.rglob("agent-logs/*.json")):
        events = json.loads(path.read_text(encoding="utf-8"))
        try:
            body = openhands.request_of(events)
        except ValueError:
            continue
        seen: set[str] = set()
        usages = []
        for event in events:
            meta = event.get("tool_call_metadata") if isinstance(event, dict) else None
            response = meta.get("model_response") if meta else None
            if response and response.get("id") not in seen:  # one response, many calls
                seen.add(response.get("id"))
                usages.append(ctxwin.read_usage(response))
        yield Run(path.parent.parent.name, body, usages)


def claude_runs(src: Path) -> Iterator[Run]:
    """The Claude Code conversations under ``src``, with the usage of the API message that
    answered each request."""
    for path in sorted(src.rglob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            bodies = dict(claude.bodies_of(lines, path.stem))
        except ValueError:
            continue
        records = json_lines(lines)
        usage_of = {}
        for record in records:
            message = record.get("message")
            if isinstance(message, dict) and message.get("id") and message.get("usage"):
                usage_of.setdefault(message["id"], message["usage"])
        conversations = claude.conversations_of(records)
        for k, conversation in enumerate(conversations):
            name = f"{path.stem}.json" if len(conversations) == 1 else f"{path.stem}__seg{k}.json"
            if name not in bodies:
                continue
            usages = []
            for mid in claude.turn_ids(conversation):
                if mid not in usage_of:
                    break
                usages.append(ctxwin.read_usage(usage_of[mid]))
            yield Run(name.removesuffix(".json"), bodies[name], usages)


def compare(
    run: Run, price: Pricing, make_policy: Callable[[], ctxwin.Policy] | None = None
) -> Compared | None:
    """The run's figures, or None when fewer than three requests are matched; with a policy
    (``make_policy`` makes a fresh one), also what it pays against the unmanaged history,
    with the model's cache and with the provider's lost caches, and what it would pay told
    where the cache was lost (:func:`cold_jumps`)."""
    # no minimum here: the logs leave out the tool definitions and system prompt that make
    # a short request long enough to cache (``a`` below puts them back)
    plain = Pricing(cache_write=price.cache_write, cache_read=price.cache_read)
    policy = make_policy() if make_policy is not None else None
    detail = replay(run.body, policy, pricing=plain).requests_detail
    model = [d.unmanaged for d in detail]
    n = min(len(model), len(run.usages))
    if n < 3:
        return None
    model, usages = model[:n], run.usages[:n]
    x = [float(t) for t, _ in model]
    y = [float(u.input_tokens) for u in usages]
    slope, envelope, r2 = fit(x, y)

    def provider(tokens: float) -> float:
        return envelope + slope * tokens

    model_bill = real_bill = billed = 0.0
    for k in range(1, n):
        (t, c), u = model[k], usages[k]
        cached = provider(c) if provider(c) >= price.min_prefix else 0.0
        model_bill += price.cache_write * (provider(t) - cached) + price.cache_read * cached
        real_bill += price.cache_write * (u.input_tokens - u.cached_tokens)
        real_bill += price.cache_read * u.cached_tokens
        uncached = u.input_tokens - u.cached_tokens - u.cache_write_tokens
        billed += uncached + price.cache_write * u.cache_write_tokens
        billed += price.cache_read * u.cached_tokens
    lost_at = [
        k
        for k in range(1, n)
        if usages[k].cached_tokens < LOST * usages[k - 1].input_tokens
        and usages[k - 1].input_tokens >= price.min_prefix
    ]
    managed = [d.managed for d in detail[:n]] if policy is not None else []
    relost = sum(
        (price.cache_write - price.cache_read)
        * max(usages[k - 1].input_tokens - usages[k].cached_tokens, 0)
        for k in lost_at
    )
    return Compared(
        run.name,
        n,
        slope,
        envelope,
        r2,
        sum(u.cached_tokens for u in usages[1:]),
        sum(u.input_tokens for u in usages[:-1]),
        sum(c for _, c in model[1:]),
        sum(t for t, _ in model[:-1]),
        len(lost_at),
        relost,
        model_bill,
        real_bill,
        billed,
        _bills(model, managed, set(lost_at), price),
        _told(run, plain, make_policy, n, set(lost_at)) if make_policy is not None else 0.0,
    )


_COLD = [False]


@contextmanager
def cold_jumps() -> Iterator[None]:
    """The cost rule told, through :data:`_COLD`, that the request being folded finds the
    provider's cache cold (a measurement, not a feature): the request writes everything
    anyway, so a jump costs nothing, and every eligible result is cleared."""
    patched = {"price": 0.0, "head_loss": 0.0, "affordable": True, "_wait": False}
    plain = {name: getattr(_fold, name) for name in patched}

    def told(name: str) -> Callable[..., Any]:
        return lambda *a, **k: patched[name] if _COLD[0] else plain[name](*a, **k)

    for name in patched:
        setattr(_fold, name, told(name))
    try:
        yield
    finally:
        for name, value in plain.items():
            setattr(_fold, name, value)


def _told(
    run: Run, plain: Pricing, make_policy: Callable[[], ctxwin.Policy], n: int, lost: set[int]
) -> float:
    """The policy's bill with the lost caches, told at each which requests find it cold."""
    policy = make_policy()
    original = policy.apply
    calls = itertools.count()

    def apply(request: object, **kwargs: Any) -> Any:
        _COLD[0] = next(calls) in lost
        try:
            return original(request, **kwargs)
        finally:
            _COLD[0] = False

    policy.apply = apply  # type: ignore[method-assign]
    with cold_jumps():
        managed = [d.managed for d in replay(run.body, policy, pricing=plain).requests_detail]
    return _bills(managed[:n], managed[:n], lost, plain)[3]


def _bills(
    model: list[tuple[int, int]], managed: list[tuple[int, int]], lost: set[int], price: Pricing
) -> tuple[float, float, float, float]:
    """What the unmanaged history and the policy's requests cost from the second request on
    (ctxwin's tokens): with the model's cache, and with nothing read where the provider lost
    its cache. All 0 without a policy."""
    out = [0.0, 0.0, 0.0, 0.0]
    for k in range(1, len(managed)):
        for i, (tokens, cached) in enumerate((model[k], managed[k])):
            for j, read in enumerate((cached, 0 if k in lost else cached)):
                out[2 * j + i] += price.cache_write * (tokens - read) + price.cache_read * read
    return out[0], out[1], out[2], out[3]


def fit(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """Least squares ``y = a + b x``: ``(b, a, R²)``."""
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxx = sum((v - mx) ** 2 for v in x)
    sxy = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True))
    syy = sum((v - my) ** 2 for v in y)
    if not sxx or not syy:
        return 1.0, my - mx, 0.0
    b = sxy / sxx
    return b, my - b * mx, sxy * sxy / (sxx * syy)


def report(name: str, rows: list[Compared], per_run: bool) -> None:
    """Print one set's figures (see the module)."""
    good = [r for r in rows if r.r2 >= ALIGNED]
    bad = [r for r in rows if r.r2 < ALIGNED]
    print(f"== {name}: {len(good)} runs matched, {sum(r.requests for r in good)} requests")
    for r in bad:
        print(f"  not matched (R² {r.r2:.2f}): {r.name}")
    if not good:
        return
    if per_run:
        for r in good:
            print(
                f"  {r.name[-60:]:60} {r.requests:4} b {r.slope:5.3f} a {r.envelope:7.0f} "
                f"R² {r.r2:5.3f} lost {r.lost:3} bill model/real {r.model_bill / r.real_bill:6.3f}"
            )
    med = statistics.median
    print(
        f"  provider tokens = a + b x ctxwin's: b {med(r.slope for r in good):.3f} (median; "
        f"{min(r.slope for r in good):.3f} to {max(r.slope for r in good):.3f}), a "
        f"{med(r.envelope for r in good):.0f}, R² {med(r.r2 for r in good):.4f} (median)"
    )
    real = sum(r.real_read for r in good) / max(sum(r.real_previous for r in good), 1)
    model = sum(r.model_read for r in good) / max(sum(r.model_previous for r in good), 1)
    lost = sum(r.lost for r in good)
    requests = sum(r.requests - 1 for r in good)
    print(
        f"  cache: the provider read {real:.3f} of the previous request's input, the model "
        f"{model:.3f}; cache lost on {lost} of {requests} requests "
        f"({lost / max(requests, 1):.1%}), in {sum(1 for r in good if r.lost)} runs, "
        f"{sum(r.relost for r in good) / sum(r.real_bill for r in good):.1%} of the bill"
    )
    model_bill = sum(r.model_bill for r in good)
    real_bill = sum(r.real_bill for r in good)
    billed = sum(r.billed for r in good)
    print(
        f"  bill from the second request on: the model's {model_bill / real_bill:.3f} x the "
        f"provider's counts under the same formula; as billed {billed / real_bill:.3f} x"
    )
    sums = [sum(r.policy[i] for r in good) for i in range(4)]
    if sums[0]:
        told = sum(r.told for r in good)
        print(
            f"  the policy: {sums[1] / sums[0]:.3f} x unmanaged with the model's cache, "
            f"{sums[3] / sums[2]:.3f} x with the provider's lost caches, {told / sums[2]:.3f} x "
            "told where they were lost"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--openhands", type=Path, metavar="SRC")
    ap.add_argument("--claude", type=Path, metavar="SRC")
    ap.add_argument("--per-run", action="store_true", help="print each run's row")
    ap.add_argument(
        "--policy",
        type=Path,
        help="also replay this policy (default: issue 10's setup, cost_window.policy_for, at "
        "--window tokens) and price it with the lost caches",
    )
    ap.add_argument("--window", type=int, default=30000)
    args = ap.parse_args(argv)
    sets = [
        ("OpenHands (Claude through LiteLLM)", args.openhands, openhands_runs, "anthropic"),
        ("Claude Code", args.claude, claude_runs, "anthropic"),
    ]
    if not any(src for _, src, _, _ in sets):
        print("nothing to read: give --openhands or --claude", file=sys.stderr)
        return 2
    for name, src, runs, pricing in sets:
        if src is None:
            continue
        price = pricing_presets()[pricing]

        def make(pricing: str = pricing) -> ctxwin.Policy:
            if args.policy is not None:
                return ctxwin.load_policy(args.policy)
            return policy_for(args.window, 3, 1000, "cost", pricing)

        rows = [r for r in (compare(run, price, make) for run in runs(src)) if r is not None]
        report(f"{name}, {pricing} prices", rows, args.per_run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
