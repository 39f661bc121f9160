"""The cost window on random made-up OpenAI Responses histories (issue #10, stop 28).

    python benchmarks/random_responses.py [--histories 300] [--seed 1] [--jobs 2]

In a Responses history a turn's reasoning item comes before its call: the window, which
looks after each item, meets a turn before the round it opens has begun. Each history here
is rounds of an optional reasoning item (20 to 1,200 tokens) and a call with its output (20
to 1,500 tokens), with now and then a user message or an answer (a reasoning item and a
message, no call). Tokens are counted as words (:class:`ctxwin.testing.FakeCounter`), so
sizes are exact. Two parts:

- the invariants, under random settings (a window of 1.5k to 100k tokens with
  ``overflow: drop_oldest_rounds``, ``keep_rounds`` 1 to 3, ``clear_reasoning`` on or off,
  caps or none, three pricings): every request checks clean, and at three requests in ten a
  fresh policy gives the same request and the policy applied to its own output changes
  nothing. Printed: how many requests failed each;
- the bill, under an 8k window (caps 400, 3 rounds kept, drops), with and without
  ``clear_reasoning``: the policy's effective cost against the clairvoyant optimum of its
  own family (``ctxwin.replay(..., optimum=True)``), summed over the histories and at worst,
  under each pricing. A policy of the family never pays less than that optimum.
"""

from __future__ import annotations

import argparse
import random
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from _histories import REPO  # noqa: F401  (puts this checkout on sys.path)

import ctxwin
from ctxwin.replay import replay, request_points
from ctxwin.testing import FakeCounter

PRICINGS = ("anthropic", "openai", "openai-4o")
FORMAT = "openai-responses"


def words(n: int, word: str) -> str:
    return " ".join([word] * n)


def history(rng: random.Random, rounds: int) -> list[dict[str, Any]]:
    """A random Responses history of about ``rounds`` rounds."""
    items: list[dict[str, Any]] = [{"role": "user", "content": words(rng.choice((5, 50)), "task")}]
    for r in range(rounds):
        if rng.random() < 0.1:
            items.append({"role": "user", "content": words(rng.randint(3, 60), f"u{r}")})
        if rng.random() < 0.8:
            text = words(rng.choice((20, 100, 400, 1200)), f"t{r}")
            summary = [{"type": "summary_text", "text": text}]
            items.append({"type": "reasoning", "id": f"rs_{r}", "summary": summary})
        if rng.random() < 0.1:  # an answer: no call
            content = words(rng.randint(3, 80), f"a{r}")
            items.append({"type": "message", "role": "assistant", "content": content})
            continue
        calls = rng.choice((1, 1, 1, 2))
        for j in range(calls):
            args = '{"cmd": "' + words(rng.choice((1, 20)), "x") + '"}'
            call = {"type": "function_call", "call_id": f"c{r}_{j}", "arguments": args}
            items.append({**call, "name": rng.choice(("shell", "read"))})
        for j in range(calls):
            output = words(rng.choice((20, 100, 300, 800, 1500)), f"o{r}")
            items.append({"type": "function_call_output", "call_id": f"c{r}_{j}", "output": output})
    return items


def policy(config: dict[str, Any]) -> ctxwin.Policy:
    return ctxwin.Policy(config, counter=FakeCounter(), format=FORMAT)


def invariants(job: tuple[int, int]) -> dict[str, int]:
    """Apply a random policy at every request of a random history."""
    seed, index = job
    rng = random.Random(seed * 1_000_003 + index)
    items = history(rng, rng.randint(5, 40))
    config: dict[str, Any] = {
        "context_window": rng.choice((1_500, 3_000, 6_000, 100_000)),
        "pricing": rng.choice(PRICINGS),
        "window": {"keep_rounds": rng.randint(1, 3), "clear_reasoning": rng.random() < 0.5},
        "overflow": "drop_oldest_rounds",
    }
    if rng.random() < 0.3:
        config["tools"] = {"*": {"max_tokens": rng.choice((100, 400))}}
    pol = policy(config)
    row = {"requests": 0, "dropped": 0, "checked": 0, "unclean": 0, "hidden": 0, "moved": 0}
    for t in request_points({"input": items}, FORMAT):
        body = {"input": items[:t]}
        result = pol.apply(body)
        row["requests"] += 1
        row["dropped"] += any(e.step == "drop" for e in result.report.edits)
        row["unclean"] += bool(ctxwin.check(result.request))
        if rng.random() < 0.3:
            row["checked"] += 1
            row["hidden"] += policy(config).apply(body).request != result.request
            row["moved"] += policy(config).apply(result.request).request != result.request
    return row


def bill(job: tuple[int, int]) -> dict[str, Any]:
    """The history's cost against the optimum, with and without ``clear_reasoning``."""
    seed, index = job
    rng = random.Random(seed * 1_000_003 + index)
    items = history(rng, rng.randint(20, 60))
    out: dict[str, Any] = {}
    for clear in (False, True):
        for pricing in PRICINGS:
            config = {
                "context_window": 8_000,
                "pricing": pricing,
                "window": {"keep_rounds": 3, "clear_reasoning": clear},
                "overflow": "drop_oldest_rounds",
                "tools": {"*": {"max_tokens": 400}},
            }
            run = replay({"input": items}, policy(config), format=FORMAT, optimum=True)
            assert run.optimum is not None
            out[(clear, pricing)] = (run.managed.effective_cost, run.optimum.effective_cost)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    jobs = [(args.seed, i) for i in range(args.histories)]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(invariants, jobs, chunksize=4))
        bills = list(pool.map(bill, jobs[: max(args.histories // 3, 1)], chunksize=2))
    total = {k: sum(r[k] for r in rows) for k in rows[0]}
    print(f"invariants, {args.histories} histories (seed {args.seed}):")
    print(
        f"  {total['requests']:,} requests ({total['dropped']:,} with a drop): "
        f"{total['unclean']} not clean; of {total['checked']:,} checked, "
        f"{total['hidden']} unlike a fresh policy's, {total['moved']} not their own fixed point"
    )
    print(f"bill, {len(bills)} histories of 20 to 60 rounds, 8k window, x the optimum:")
    for clear in (False, True):
        cells = []
        for pricing in PRICINGS:
            pairs = [b[(clear, pricing)] for b in bills]
            summed = sum(p for p, _ in pairs) / sum(o for _, o in pairs)
            worst = max(p / o for p, o in pairs)
            below = sum(1 for p, o in pairs if p < o * (1 - 1e-9))
            cells.append(f"{pricing} {summed:.3f} (worst {worst:.3f}, {below} below)")
        print(f"  clear_reasoning {str(clear).lower():5}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
