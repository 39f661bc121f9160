"""The cost window's two promises on random made-up histories (issue #10).

    python benchmarks/random_histories.py [--histories 800] [--seed 1] [--jobs 2]

Each history is one ``read_file`` round after another, results of two sizes (a share of
large ones among small ones), under random settings: the system prompt (50 to 4,000
tokens), the assistant's text per turn, ``keep_rounds`` (1 to 3), the pricing (anthropic,
openai, openai-4o) and the window (1M, 8k or 4k tokens); in three histories of five, a
user message after every 1, 2 or 4 rounds, as in a support chat (the grace then counts only
in the agent's longer runs). Tokens are counted as words
(:class:`ctxwin.testing.FakeCounter`), so sizes are exact.

It checks, under ``window.strategy: cost`` with the default ``max_overrun: 0.1`` and
``overrun_grace`` (``--grace``, 2 by default as in the policy):

- the bound: with the 1M window (no ceiling, no drop), the conversation that ends at each
  request at least ``grace`` requests after the last jump the grace may have counted for
  (one made after more than ``grace`` requests of the agent's own) pays at most 1.10x its
  unmanaged bill. Printed: the worst such ratio per history, how many histories go above 1.10x, the
  worst of the conversations that end sooner after a jump (which ``overrun_grace`` lets go
  up to about 1.15x), and the whole histories' bills against unmanaged;
- the fixed point: at every other message of every history, the policy applied to its own
  output changes nothing. Printed: how many of those checks found a change;
- sent back: a client that sends back ctxwin's output with each new turn gets what a fresh
  policy gives for the same body at every request. Printed: how many requests did not.

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
TALK = (0, 0, 1, 2, 4)
"""A user message after every this many rounds (0: none, the agent alone after the first)."""


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
    talk = rng.choice(TALK)  # drawn last: the histories without user turns are as before
    if talk:  # a user message after every ``talk``-th round, as in a support chat
        at = range(2 + 2 * talk, len(msgs), 2 * talk)
        for i in reversed(at):
            msgs.insert(i, {"role": "user", "content": words(30)})
    settings["talk"] = talk
    return msgs, settings


def runs(msgs: list[dict[str, Any]]) -> list[int]:
    """For each request (one before each assistant message, one at the end): how many
    requests the agent had sent since the user's latest message when the request's first
    new message joined, the most the grace may have counted for a jump in that request (a
    user message among its new messages only lowers it)."""
    out, run, first = [], 0, 0
    for m in msgs:
        if m["role"] == "assistant":
            out.append(first)
            run += 1
            first = run
        elif m["role"] == "user":
            run = 0
    return [*out, first]


def policy(pricing: str, window: int, keep_rounds: int, grace: int = GRACE) -> ctxwin.Policy:
    config = {
        "context_window": window,
        "pricing": pricing,
        "window": {"strategy": "cost", "keep_rounds": keep_rounds, "overrun_grace": grace},
    }
    return ctxwin.Policy(config, counter=FakeCounter(), format="openai-chat")


def running_bills(
    msgs: list[dict[str, Any]], pol: ctxwin.Policy, pricing: str, grace: int
) -> list[tuple[float, int]]:
    """For the conversation ending at each request: its bill as x its unmanaged bill, and
    how many requests it has sent since its last jump the grace may have counted for (a
    large number before the first): one made when the agent had sent more than ``grace``
    requests since the user's latest message. The others hold the strict bound, but only
    on the bill as the history now stands: a graced jump's debt still runs through them."""
    price = pricing_presets()[pricing]
    run = replay({"messages": msgs}, pol, format="openai-chat")
    paid = unmanaged = 0.0
    since = len(run.requests_detail)
    out = []
    for r, alone in zip(run.requests_detail, runs(msgs), strict=True):
        paid += request_cost(price, r.managed)
        unmanaged += request_cost(price, r.unmanaged)
        since = 0 if r.jump and alone > grace else since + 1
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
        # the history ends with its last result: the replay's last request is the one the
        # agent sent for it (an answer appended would add one nobody sends)
        bills = running_bills(msgs, pol, s["pricing"], grace)
        out["worst"] = max(ratio for ratio, since in bills if since >= grace)
        out["soon"] = max((ratio for ratio, since in bills if since < grace), default=0.0)
        out["whole"] = bills[-1][0]
    moved = checks = 0
    for cut in range(6, len(msgs) + 1, 2):
        first = pol.apply({"messages": msgs[:cut]})
        checks += 1
        moved += pol.apply(first.request).request != first.request
    out["checks"], out["moved"] = checks, moved
    out["kept"], out["kept_unlike"] = kept(msgs, s, grace)
    return out


def kept(msgs: list[dict[str, Any]], s: dict[str, Any], grace: int) -> tuple[int, int]:
    """The history applied by a client that sends back ctxwin's output with each new turn
    (the policy resumes where each request parts from the last: see ``window.MARKS``):
    how many requests, and how many of them came out unlike a fresh policy's answer to the
    same body."""
    pol = policy(s["pricing"], s["window"], s["keep_rounds"], grace)
    points = [i for i, m in enumerate(msgs) if m["role"] == "assistant"] + [len(msgs)]
    sent: list[Any] = []
    before = unlike = 0
    for t in points:
        body = {"messages": [*sent, *msgs[before:t]]}
        result = pol.apply(body)
        fresh = policy(s["pricing"], s["window"], s["keep_rounds"], grace).apply(body)
        unlike += result.request != fresh.request or result.report.edits != fresh.report.edits
        sent, before = result.request["messages"], t
    return len(points), unlike


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
        f"  worst bill of a conversation so far, {args.grace} or more requests after the "
        f"last jump the grace may have counted for: {worst:.3f}x unmanaged"
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
            f"worst {max(r['whole'] for r in below):.3f}x unmanaged, above {LIMIT:.2f}x: "
            f"{sum(r['whole'] > LIMIT for r in below)}"
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
    unlike = [r for r in rows if r["kept_unlike"]]
    print(f"\nsent back, {sum(r['kept'] for r in rows)} requests of a client that sends back")
    print("the output with each new turn, each against a fresh policy's answer to it:")
    print(f"  unlike: {sum(r['kept_unlike'] for r in rows)} (in {len(unlike)} histories)")
    for r in unlike:
        print(f"    #{r['index']}: {r['kept_unlike']} ({r['pricing']}, window {r['window']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
