"""Made-up agent traces for the cost benchmark, deterministic (OpenAI Chat).

The shared corpora hold few long traces, so the cost rule was also tuned and checked on
families of made-up SWE-agent-like runs: a system prompt and a task, then rounds of one
assistant turn (a thought and a ``bash`` call) and its results, with lognormal result sizes
and lengths. ``calibrated`` matches the issue's table (the optimum at 0.73 / 0.71 / 0.57 of
the unmanaged cost at 30k tokens, caps 1,000, keep 3). The text is random words: only the
token counts matter to the window.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

__all__ = ["FAMILIES", "write_traces"]

VOCABULARY = (
    "def return self import from class if else for in while the a to of is not None True "
    "False file path line error test assert value data result config model list dict str "
    "int print raise except try with open read write os sys json np pd x y z i j k n args"
)
WORDS = tuple(VOCABULARY.split(" "))

FAMILIES: dict[str, dict[str, Any]] = {
    # name: requests lognormal (mu, sigma), result tokens lognormal, assistant tokens
    # uniform, calls per round up to, seed offset
    "results": {"n": (3.2, 0.7), "res": (5.5, 1.3), "asst": (40, 350), "calls": 1, "seed": 0},
    "talky": {"n": (3.5, 0.6), "res": (5.0, 1.0), "asst": (100, 800), "calls": 2, "seed": 1000},
    "mixed": {"n": (3.3, 0.6), "res": (5.3, 1.4), "asst": (50, 400), "calls": 1, "seed": 3000},
    "calibrated": {"n": (3.3, 0.6), "res": (5.0, 1.5), "asst": (80, 500), "calls": 1, "seed": 4000},
    "parallel": {"n": (3.4, 0.7), "res": (5.2, 1.5), "asst": (60, 450), "calls": 2, "seed": 6000},
}


def _text(rng: random.Random, n: int) -> str:
    out: list[str] = []
    while len(out) < n:
        out.extend(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        out.append("\n")
    return " ".join(out[:n])


def trace(family: str, i: int) -> dict[str, Any]:
    f = FAMILIES[family]
    rng = random.Random(f["seed"] + i)
    rounds = max(4, min(200, int(rng.lognormvariate(*f["n"]))))
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": _text(rng, 1200)},
        {"role": "user", "content": _text(rng, 600)},
    ]
    for r in range(rounds):
        ids = [f"call_{i}_{r}_{j}" for j in range(rng.randint(1, f["calls"]))]
        calls = [
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": "bash",
                    "arguments": json.dumps({"command": _text(rng, rng.randint(5, 40))}),
                },
            }
            for cid in ids
        ]
        turn = _text(rng, rng.randint(*f["asst"]))
        msgs.append({"role": "assistant", "content": turn, "tool_calls": calls})
        for cid in ids:
            size = min(int(rng.lognormvariate(*f["res"])), 20_000)
            msgs.append({"role": "tool", "tool_call_id": cid, "content": _text(rng, size)})
    msgs.append({"role": "assistant", "content": "done"})
    return {"model": "gpt-4o", "messages": msgs}


def write_traces(directory: Path, per_family: int) -> list[Path]:
    """``per_family`` traces of every family, written as ``FAMILY-NN.json``."""
    paths = []
    for family in FAMILIES:
        for i in range(per_family):
            path = directory / f"{family}-{i:02d}.json"
            path.write_text(json.dumps(trace(family, i)), encoding="utf-8")
            paths.append(path)
    return paths
