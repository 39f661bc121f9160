"""The cost window's two promises on random made-up histories (issue #10).

    python benchmarks/random_histories.py [--histories 800] [--seed 1] [--jobs 2]

Each history is one ``read_file`` round after another, results of two sizes (a share of
large ones among small ones), under random settings: the system prompt (50 to 4,000
tokens), the assistant's text per turn, ``keep_rounds`` (1 to 3), the pricing (anthropic,
openai, openai-4o) and the window (1M, 8k or 4k tokens). Tokens are counted as words
(:class:`ctxwin.testing.FakeCounter`), so sizes are exact.

It checks, under ``window.strategy: cost`` with the default ``max_overrun: 0.1`` and
``overrun_grace`` (``--grace``, 2 by default as in the policy):

- the bound: with the 1M window (no ceiling, no drop), the conversation that ends at each
  request at least ``grace`` requests after its last jump pays at most 1.10x its unmanaged
  bill. Printed: the worst such ratio per history, how many histories go above 1.10x, the
  worst of the conversations that end sooner after a jump (which ``overrun_grace`` lets go
  up to about 1.15x), and the whole histories' bills against unmanaged;
- the fixed point: at every other message of every history, the policy applied to its own
  output changes nothing. Printed: how many of those checks found a change.

Such a search found the two faults fixed in this stop (a jump's re-write under the minimum
cacheable prefix went uncharged: up to 1.34x; a ceiling jump's leftover cleared only on the
second pass) and prints what remains.
"""

from __future__ import annotations

import argparse
import random
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from cost_window import request_cost

import ctxwin
from ctxwin._policy.tables import pricing_presets
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter

PRICINGS = ("anthropic", "openai", "openai-4o")
WINDOWS = (1_000_000, 8_000, 4_000)
LIMIT = 1.10
GRACE = 2


def words(n: int) -> str:
    return " ".join(["data"] * n)


def history(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A random history and the settings to apply it under."""
    rounds, big, small = rng.randint(8, 60), rng.randint(200, 1500), rng.randint(10, 200)
    share, turn = rng.random() * 0.5, rng.choice((5, 60, 150, 400))
    head = rng.choice((50, 400, 1500, 4000))
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": words(head)},
        {"role": "user", "content": words(50)},
    ]
    for r in range(rounds):
        call = {
            "id": f"c{r}",
            "type": "function",
            "function": {"name": "read_file", "arguments": "{}"},
        }
        size = big if rng.random() < share else small
        msgs.append({"role": "assistant", "content": words(turn), "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": f"c{r}", "content": words(size)})
    settings = {
        "pricing": rng.choice(PRICINGS),
        "window": rng.choice(WINDOWS),
        "keep_rounds": rng.randint(1, 3),
    }
    return msgs, settings


def policy(pricing: str, window: int, keep_rounds: int, grace: int = GRACE) -> ctxwin.Policy:
    config = {
        "context_window": window,
        "pricing": pricing,
        "window": {"strategy": "cost", "keep_rounds": keep_rounds, "overrun_grace": grace},
    }
    return ctxwin.Policy(config, counter=FakeCounter(), format="openai-chat")


def running_bills(
    msgs: list[dict[str, Any]], pol: ctxwin.Policy, pricing: str
) -> list[tuple[float, int]]:
    """For the conversation ending at each request: its bill as x its unmanaged bill, and
    how many requests it has sent since its last jump (a large number before the first)."""
    price = pricing_presets()[pricing]
    run = replay({"messages": msgs}, pol, format="openai-chat")
    paid = unmanaged = 0.0
    since = len(run.requests_detail)
    out = []
    for r in run.requests_detail:
        paid += request_cost(price, r.managed)
        unmanaged += request_cost(price, r.unmanaged)
        since = 0 if r.jump else since + 1
        out.append((paid / unmanaged, since))
    return out


def check(job: tuple[int, int, int]) -> dict[str, Any]:
    """One history: ``job`` is (seed, index, grace)."""
    seed, index, grace = job
    rng = random.Random(seed * 1_000_003 + index)
    msgs, s = history(rng)
    out: dict[str, Any] = {"index": index, **s}
    pol = policy(s["pricing"], s["window"], s["keep_rounds"], grace)
    if s["window"] == WINDOWS[0]:
        bills = running_bills([*msgs, {"role": "assistant", "content": "done"}], pol, s["pricing"])
        out["worst"] = max(ratio for ratio, since in bills if since >= grace)
        out["soon"] = max((ratio for ratio, since in bills if since < grace), default=0.0)
        out["whole"] = bills[-1][0]
    moved = checks = 0
    for cut in range(6, len(msgs) + 1, 2):
        first = pol.apply({"messages": msgs[:cut]})
        checks += 1
        moved += pol.apply(first.request).request != first.request
    out["checks"], out["moved"] = checks, moved
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=800)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--grace", type=int, default=GRACE, help="window.overrun_grace")
    args = ap.parse_args(argv)
    jobs = [(args.seed, i, args.grace) for i in range(args.histories)]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(check, jobs, chunksize=8))
    below = [r for r in rows if "worst" in r]
    over = sorted((r for r in below if r["worst"] > LIMIT), key=lambda r: -r["worst"])
    print(f"{len(rows)} random histories (seed {args.seed})")
    print(f"\nbound, {len(below)} histories under the 1M window (no ceiling, no drop):")
    worst = max((r["worst"] for r in below), default=0.0)
    print(
        f"  worst bill of a conversation so far, {args.grace} or more requests after its "
        f"last jump: {worst:.3f}x unmanaged"
    )
    print(f"  above {LIMIT:.2f}x: {len(over)}")
    for r in over:
        print(
            f"    #{r['index']}: {r['worst']:.3f}x ({r['pricing']}, keep_rounds {r['keep_rounds']})"
        )
    if below and args.grace:
        soon = [r for r in below if r["soon"] > LIMIT]
        print(
            f"  ending sooner after a jump: worst {max(r['soon'] for r in below):.3f}x, "
            f"above {LIMIT:.2f}x in {len(soon)} histories"
        )
    if below:
        print(
            f"  whole histories: mean {sum(r['whole'] for r in below) / len(below):.3f}x, "
            f"worst {max(r['whole'] for r in below):.3f}x unmanaged"
        )
    moved = [r for r in rows if r["moved"]]
    checks = sum(r["checks"] for r in rows)
    print(f"\nfixed point, {checks} requests re-applied to their own output:")
    print(f"  changed: {sum(r['moved'] for r in rows)} (in {len(moved)} histories)")
    for r in moved:
        print(
            f"    #{r['index']}: {r['moved']} ({r['pricing']}, window {r['window']}, "
            f"keep_rounds {r['keep_rounds']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
