"""How apply, the report and appending scale with the history: 10k to 1M messages.

    python benchmarks/scale.py [--sizes 10000,100000,1000000] [--steps 5] [--same-id]

History: an OpenAI-chat agent, each round one call with a short result (about 40 tokens),
under a policy whose window is active (context 20k tokens, caps on). Per size:

- ``cold``: the first apply of a fresh policy on the whole history;
- ``report``: the first access to that apply's report;
- ``append``: the agent appends one round and applies again (median of ``--steps``);
- ``append report``: the report of such an apply.

Each figure is in ms, and per 10k messages for cold (linear work shows as a flat column).
The garbage collector stays on, as in an agent.

``--same-id``: every call is ``call_0`` (as some OpenAI-compatible servers number calls per
turn) and the body is for a Claude model, which wants ids unique in the request: repair
renames every call but the first at every request (LiteLLM sending a GPT-style history to
Claude).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from _histories import REPO  # noqa: F401 - puts this checkout on sys.path

import ctxwin

POLICY: dict[str, Any] = {
    "context_window": 20_000,
    "window": {"trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {"*": {"max_tokens": 200}},
}


SAME_ID = {"on": False}


def round_of(r: int) -> list[dict[str, Any]]:
    cid = "call_0" if SAME_ID["on"] else f"call_{r}"
    args = json.dumps({"path": f"src/mod_{r}.py"})
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "read", "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": f"line {r}: value = compute({r})\n" * 3},
    ]


def history(messages: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Do the task."},
    ]
    r = 0
    while len(out) < messages:
        out.extend(round_of(r))
        r += 1
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:10.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--same-id", action="store_true", help="every call call_0, for Claude")
    args = parser.parse_args()
    SAME_ID["on"] = args.same_id
    model = {"model": "claude-sonnet-4-5"} if args.same_id else {}
    print(
        f"{'messages':>10} {'cold':>10} {'per 10k':>10} {'report':>10} {'append':>10} "
        f"{'app.rep':>10}   (ms)"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        msgs = history(size)
        policy = ctxwin.Policy(POLICY, format="openai-chat")
        t0 = time.perf_counter()
        result = policy.apply({**model, "messages": msgs})
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        _ = result.report
        report = time.perf_counter() - t0
        appends, reports = [], []
        r = size
        for _ in range(args.steps):
            msgs = [*msgs, *round_of(r)]
            r += 1
            t0 = time.perf_counter()
            result = policy.apply({**model, "messages": msgs})
            appends.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            _ = result.report
            reports.append(time.perf_counter() - t0)
        print(
            f"{size:>10,} {ms(cold)} {ms(cold / size * 10_000)} {ms(report)} "
            f"{ms(statistics.median(appends))} {ms(statistics.median(reports))}"
        )


if __name__ == "__main__":
    main()
