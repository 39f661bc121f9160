"""What not knowing where a conversation ends costs any window (issue #10, stop 30).

    python benchmarks/endings.py [--traces DIR] [--policy FILE] [--corpora DIR]
                                 [--only GLOB] [--jobs 2] [--window 30000] [--keep 3]
                                 [--cap 1000] [--per-trace] [--past-window]
                                 [--synthetic N]

A trace holds one conversation for each of its requests: the one that ends there (an agent
stopped by its step or cost limit, a user who leaves). The window is a pure function of the
history so far, so it decides each request alike for every conversation that reaches it:
its schedule on the whole trace is its schedule on each of them. Each of them has its own
clairvoyant optimum, which knows where it ends (:func:`ctxwin._optimum.prefix_optima`).

For each trace and pricing (Anthropic 1.25/0.1, OpenAI 1.0/0.1, GPT-4o 1.0/0.5), with the
issue's policy (:func:`cost_window.policy_for`) or ``--policy``, it prints:

- ``policy``: the policy's cost over the optimum, for the whole trace;
- ``worst ending``: the same at the conversation the trace contains that it pays the most
  for, against that conversation's optimum;
- ``least worst``: the least worst ending of any schedule of the family (the cheapest
  schedules under ceilings of ``r`` times each ending's optimum, bisected on ``r``; see
  ``ceilings`` in :func:`ctxwin._optimum.optimum`). No window of the family, whatever its
  rule, does better on every conversation of the trace: one that does on a trace's longest
  conversation pays for it on a shorter one;
- ``whole within 1.10``: the whole trace's cost under the cheapest schedule that stays
  within 1.10 of the optimum at every ending (``-`` when none does).

Under the totals: how many traces no rule can keep within the first target (5%) at every
ending, and what that means for a set of them. For each such trace, every rule has an
ending it pays more than 5% above the optimum for; together those endings are a set of
conversations on which it pays more than 5% above in total. With more traces than the
issue's 40, the same for the 40 whose least worst ending is highest: a set of 40
conversations on which any rule pays at least the lowest of their 40.

``--past-window`` counts only the endings whose unmanaged history has reached the window:
the conversations the first target is about (below the window, the second target applies).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _histories import REPO  # noqa: F401  (puts this checkout on sys.path)
from cost_window import CORPORA, PRICINGS, SAMPLE, TARGET, chosen, policy_for, request_cost

import ctxwin
from ctxwin._optimum import Layout, optimum, prefix_optima
from ctxwin._policy.tables import Pricing
from ctxwin.formats import detect, get_adapter
from ctxwin.replay import _family_layout, _pricing, replay, request_points

WITHIN = 1.10
"""The bound at every ending under which ``whole within 1.10`` prices the whole trace."""
STEPS = 14
"""Bisection steps for the least worst ending (its precision: the policy's worst ending
less 1, over ``2 ** STEPS``)."""


def run_one(job: tuple[str, str, str | None, int, int, int, bool]) -> dict[str, Any] | None:
    """One trace under one pricing: the figures above, as a row (with ``past``, counting
    only the endings whose unmanaged history has reached the window; None when none has)."""
    path, pricing, policy_file, window, keep, cap, past = job
    body = json.loads(Path(path).read_text(encoding="utf-8"))
    if policy_file:
        pol = ctxwin.load_policy(Path(policy_file))
    else:
        pol = policy_for(window, keep, cap, "cost", pricing)
    run = replay(body, pol, pricing=pricing)
    price = _pricing(pol, body, pricing)  # as the replay prices it: the model's min_prefix
    fmt = detect(body)
    listed = get_adapter(fmt).listed(body)
    points = request_points(listed, fmt)
    lay = _family_layout(listed, pol, fmt)
    keep_rounds = pol.config.window.keep_rounds
    best = prefix_optima(lay, points, price, keep_rounds, run.context_window)
    paid, counted, spent, peak = [], [], 0.0, 0
    for request in run.requests_detail:
        spent += request_cost(price, request.managed)
        paid.append(spent)
        peak = max(peak, request.unmanaged[0])
        counted.append(not past or peak > run.context_window)
    if not any(counted):
        return None
    ratios = [p / b if c else 0.0 for p, b, c in zip(paid, best, counted, strict=True)]
    worst = max(range(len(ratios)), key=ratios.__getitem__)
    bounds = [b if c else float("inf") for b, c in zip(best, counted, strict=True)]

    def bounded(r: float) -> float | None:
        return within_every_ending(lay, points, price, keep_rounds, run.context_window, bounds, r)

    least = least_worst_ending(bounded, ratios[worst])
    whole = bounded(WITHIN)
    return {
        "trace": Path(path).stem,
        "pricing": pricing,
        "requests": len(points),
        "cost": paid[-1],
        "optimum": best[-1],
        "worst": ratios[worst],
        "worst_at": worst,
        "worst_cost": paid[worst],
        "worst_optimum": best[worst],
        "least": least,
        "within": whole,
    }


def within_every_ending(
    lay: Layout,
    points: list[int],
    price: Pricing,
    keep: int,
    window: int,
    best: list[float],
    r: float,
) -> float | None:
    """What the cheapest schedule of the family that pays at most ``r`` times ``best`` at
    every ending (each ending's optimum, or infinity where it does not count) pays for the
    whole trace, or None when no schedule does."""
    ceilings = [r * b * (1 + 1e-12) for b in best]
    schedule = optimum(lay, points, price, keep, window, ceilings)
    spent = 0.0
    for request, ceiling in zip(schedule, ceilings, strict=True):
        spent += request_cost(price, (request.input_tokens, request.cached_tokens))
        if spent > ceiling * (1 + 1e-9):  # a request no schedule kept within its ceiling
            return None
    return spent


def least_worst_ending(bounded: Callable[[float], float | None], high: float) -> float:
    """The least ``r`` at which ``bounded(r)`` finds a schedule, bisected from ``[1, high]``
    (``high``: a ratio some schedule reaches, doubled until one is found)."""
    while bounded(high) is None:
        high *= 2
    low = 1.0
    if bounded(low) is not None:
        return low
    for _ in range(STEPS):
        mid = (low + high) / 2
        if bounded(mid) is None:
            low = mid
        else:
            high = mid
    return high


def totals(rows: list[dict[str, Any]]) -> list[str]:
    """The lines under one pricing's table."""
    cost = sum(r["cost"] for r in rows) / sum(r["optimum"] for r in rows)
    worst = sum(r["worst_cost"] for r in rows) / sum(r["worst_optimum"] for r in rows)
    least = [r["least"] for r in rows]
    over = [r for r in rows if r["least"] > TARGET]
    fits = [r for r in rows if r["within"] is not None]
    lines = [
        f"  policy, whole traces: {cost:.3f} x optimum; at each trace's worst ending: {worst:.3f}",
        f"  least worst ending of any schedule: median {statistics.median(least):.3f}, "
        f"highest {max(least):.3f}",
    ]
    if fits:
        within = sum(r["within"] for r in fits) / sum(r["optimum"] for r in fits)
        mine = sum(r["cost"] for r in fits) / sum(r["optimum"] for r in fits)
        lines.append(
            f"  within {WITHIN:.2f} at every ending ({len(fits)} of {len(rows)} traces can be): "
            f"the whole traces {within:.3f} x optimum at best (the policy {mine:.3f})"
        )
    lines.append(
        f"  {len(over)} of {len(rows)} traces no rule keeps within {TARGET:.2f} at every ending"
        + (
            f": for any rule, their endings include a set of {len(over)} conversations it "
            f"pays at least {min(r['least'] for r in over):.3f} x optimum for in total"
            if over
            else ""
        )
    )
    if len(rows) > SAMPLE:
        top = sorted(least, reverse=True)[:SAMPLE]
        lines.append(
            f"  the {SAMPLE} traces with the highest least worst ending: for any rule, a set of "
            f"{SAMPLE} conversations, one ending of each, it pays at least {top[-1]:.3f} x "
            "optimum for in total"
        )
    return lines


def report(rows: list[dict[str, Any]], per_trace: bool) -> None:
    for pricing in PRICINGS:
        mine = sorted((r for r in rows if r["pricing"] == pricing), key=lambda r: r["trace"])
        if not mine:
            continue
        print(f"\n== pricing {pricing}: x the optimum of the same conversation")
        if per_trace:
            print(
                f"  {'trace':48} {'requests':>8} {'policy':>7} {'worst ending':>15} "
                f"{'least worst':>11} {'whole within 1.10':>17}"
            )
            for r in mine:
                within = "-" if r["within"] is None else f"{r['within'] / r['optimum']:.3f}"
                worst = f"{r['worst']:.3f} @{r['worst_at']}"
                print(
                    f"  {r['trace'][:48]:48} {r['requests']:8} "
                    f"{r['cost'] / r['optimum']:7.3f} {worst:>15} {r['least']:11.3f} {within:>17}"
                )
        for line in totals(mine):
            print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--traces", type=Path, metavar="DIR", help="every *.json in DIR instead")
    ap.add_argument("--policy", type=Path, help="this policy instead of the issue's")
    ap.add_argument("--only", default="*")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--window", type=int, default=30000)
    ap.add_argument("--keep", type=int, default=3)
    ap.add_argument("--cap", type=int, default=1000)
    ap.add_argument("--per-trace", action="store_true", help="print each trace's row")
    ap.add_argument(
        "--past-window",
        action="store_true",
        help="count only the endings whose unmanaged history has reached the window (the "
        "conversations the first target is about); traces that never reach it are left out",
    )
    ap.add_argument(
        "--synthetic",
        type=int,
        metavar="N",
        help="N made-up traces of each family in benchmarks/_synthetic.py instead",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = chosen(args, Path(tmp), short=False)
        if paths is None:
            return 0
        rows = measure(paths, args)
    print(
        f"{len(rows) // len(PRICINGS)} traces; "
        + (f"policy {args.policy}" if args.policy else f"the issue's policy, window {args.window}")
        + (
            "; only the endings past the window, in the traces that reach it"
            if args.past_window
            else ""
        )
    )
    report(rows, args.per_trace)
    return 0


def measure(paths: list[Path], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows of every trace under every pricing, in ``args.jobs`` processes (in this one
    when 1)."""
    policy = str(args.policy) if args.policy else None
    jobs = [
        (str(p), pricing, policy, args.window, args.keep, args.cap, args.past_window)
        for p in paths
        for pricing in PRICINGS
    ]
    if args.jobs == 1:
        return [row for row in map(run_one, jobs) if row is not None]
    with ProcessPoolExecutor(args.jobs) as pool:
        return [row for row in pool.map(run_one, jobs) if row is not None]


if __name__ == "__main__":
    raise SystemExit(main())
