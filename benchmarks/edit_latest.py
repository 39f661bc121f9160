"""``edit_latest: false`` under the window: what it promises, and what a request costs.

    python benchmarks/edit_latest.py [--loops 40] [--seed 1] [--replies 1500]

A tool with ``edit_latest: false`` sends its results whole while their round is the latest
and edited (capped) from the next round on. The window weighs each request as it was sent
(:mod:`ctxwin.steps._late`). On random growing Anthropic tool loops (parallel calls,
thinking, a ``window: keep`` tool, small windows so that the window clears and drops, both
strategies, claude-opus-4-5 / claude-fable-5-2 / gpt-4o), it counts, per loop:

- requests a fresh policy answers otherwise than the policy that served the loop;
- requests ``ctxwin.check`` finds a problem in;
- results the window had cleared in a request that come back whole in the next;
- results sent whole outside the latest round (on claude-fable-5-2 a result that ended a
  task may stay whole until the user's next message: those are not counted).

Then the time of one request at the end of a long turn (``--replies`` tool rounds after a
finished task), on a model without the prefix check and on one with it, with and without
``edit_latest``.
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
import time
from typing import Any

import ctxwin

MODELS = ("claude-opus-4-5", "claude-fable-5-2", "gpt-4o")
CLEARED = "cleared to save context"


def _results(request: dict[str, Any]) -> dict[str, str]:
    return {
        b["tool_use_id"]: str(b["content"])
        for m in request["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }


def _config(rng: random.Random, strategy: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "context_window": rng.choice([3000, 6000, 12000]),
        "tokenizer": "o200k_base",
        "window": {
            "keep_rounds": rng.choice([1, 2, 3]),
            "strategy": strategy,
            "clear_tool_inputs": rng.random() < 0.5,
        },
        "overflow": "drop_oldest_rounds",
        "tools": {
            "*": {"max_tokens": rng.choice([80, 150, 400]), "edit_latest": False},
            "grep": {"max_tokens": 100},
        },
    }
    if rng.random() < 0.3:
        config["tools"]["keep"] = {"window": "keep", "edit_latest": False, "max_tokens": 200}
    return config


def loop(seed: int) -> dict[str, int]:
    """One random loop; the counts of each kind of problem."""
    rng = random.Random(seed)
    model, strategy = rng.choice(MODELS), rng.choice(["cost", "threshold"])
    parallel, thinking = rng.random() < 0.5, rng.random() < 0.5
    config = _config(rng, strategy)
    policy = ctxwin.load_policy(config)
    history: list[dict[str, Any]] = [{"role": "user", "content": "task one"}]
    found = {"requests": 0, "unlike fresh": 0, "not clean": 0, "uncleared": 0, "whole": 0}
    earlier: dict[str, str] = {}
    for s in range(rng.randint(10, 50)):
        calls = rng.choice([1, 1, 2, 3]) if parallel else 1
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": f"plan {s} " * 10, "signature": f"s{s}"})
        for c in range(calls):
            name = rng.choice(["read", "grep", "keep", "read"])
            args = {"p": "x" * rng.choice([5, 80])}
            blocks.append({"type": "tool_use", "id": f"t{s}_{c}", "name": name, "input": args})
        history.append({"role": "assistant", "content": blocks})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": f"t{s}_{c}",
                "content": " ".join(f"w{i}" for i in range(rng.choice([10, 60, 200, 500, 900]))),
            }
            for c in range(calls)
        ]
        history.append({"role": "user", "content": results})
        if rng.random() < 0.1:
            history.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
            history.append({"role": "user", "content": "next"})
        body: dict[str, Any] = {"model": model, "max_tokens": 100, "messages": list(history)}
        if thinking:
            body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
        request = policy.apply(body, format="anthropic").request
        fresh = ctxwin.load_policy(config).apply(copy.deepcopy(body), format="anthropic")
        found["requests"] += 1
        found["unlike fresh"] += fresh.request != request
        found["not clean"] += bool(ctxwin.check(request))
        now = _results(request)
        found["uncleared"] += sum(
            CLEARED in text and c in now and CLEARED not in now[c] for c, text in earlier.items()
        )
        latest = {f"t{s}_{c}" for c in range(calls)}
        sizes = (len(t.split()) for c, t in now.items() if c not in latest and CLEARED not in t)
        found["whole"] += model != "claude-fable-5-2" and any(n > 400 for n in sizes)
        earlier = now
    return found


def timed(model: str, edit_latest: bool, replies: int) -> float:
    """Median ms of the last requests of a long turn after a finished task."""
    policy = ctxwin.load_policy(
        {
            "context_window": 10_000_000,
            "tokenizer": "o200k_base",
            "window": {"keep_rounds": 2},
            "tools": {"*": {"max_tokens": 300, "edit_latest": edit_latest}},
        }
    )
    think = {"type": "thinking", "thinking": "plan " * 20, "signature": "sig"}
    history: list[dict[str, Any]] = [{"role": "user", "content": "task one"}]
    text = "\n".join(f"line {i}: value = {i * 7}" for i in range(45))

    def reply(s: int) -> None:
        call = {"type": "tool_use", "id": f"t{s}", "name": "read", "input": {"p": f"m{s}.py"}}
        history.append({"role": "assistant", "content": [think, call]})
        result = {"type": "tool_result", "tool_use_id": f"t{s}", "content": text}
        history.append({"role": "user", "content": [result]})

    for s in range(3):
        reply(s)
    history.append({"role": "assistant", "content": [think, {"type": "text", "text": "done"}]})
    history.append({"role": "user", "content": "task two"})
    times = []
    for s in range(3, 3 + replies):
        reply(s)
        body = {"model": model, "max_tokens": 4096, "messages": list(history)}
        start = time.perf_counter()
        policy.apply(body, format="anthropic")
        if s >= 3 + replies - 20:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replies", type=int, default=1500)
    args = parser.parse_args()
    totals: dict[str, int] = {}
    for i in range(args.loops):
        for key, n in loop(args.seed * 10_000 + i).items():
            totals[key] = totals.get(key, 0) + n
    print(f"{args.loops} random loops, {totals.pop('requests')} requests:")
    for key, n in totals.items():
        print(f"  {key:>13}: {n}")
    print(f"ms per request at the end of a turn of {args.replies} tool rounds (median of 20):")
    for model in ("claude-opus-4-5", "claude-fable-5-1"):
        for edit_latest in (True, False):
            ms = timed(model, edit_latest, args.replies)
            print(f"  {model:<17} edit_latest {str(edit_latest).lower():<5}: {ms:6.2f}")


if __name__ == "__main__":
    main()
