"""Fuzz: damaged requests in every format, under several policies (fixed seed).

    python benchmarks/fuzz.py [--cases 2000] [--seed 7] [--corpora ../shared/corpora]

Each case takes a request (a shared corpus trace when the folder exists, else a generated
agent history), damages its message list (drop, duplicate, move, inject a user message,
truncate, swap), and applies a policy to it. It counts a failure when:

- the output fails ``ctxwin.check`` (a provider would reject it), or is empty;
- applying the policy to its own output changes the body or adds an edit (idempotence);
- a policy that applied the request without its last message first answers differently
  from a fresh policy (order independence);
- the input was mutated;
- anything but a ctxwin error (``InputError`` for an unusable request) is raised.

Prints the number of cases and of failures by kind, and the first few failures.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _histories import REPO

import ctxwin
from ctxwin.testing import FakeCounter, agent_body

POLICIES: dict[str, dict[str, Any]] = {
    "window": {"context_window": 400, "window": {"trigger": 0.6, "target": 0.3}},
    "inputs": {
        "context_window": 600,
        "window": {"trigger": 0.5, "target": 0.2, "keep_rounds": 1, "clear_tool_inputs": True},
    },
    "caps": {
        "context_window": 2000,
        "window": {"trigger": 0.7, "target": 0.4, "clear_reasoning": True},
        "tools": {"*": {"max_tokens": 40, "truncate": "head_tail"}},
    },
    "tight": {"context_window": 150, "window": {"trigger": 0.9, "target": 0.5}},
    "error": {"context_window": 100_000, "overflow": "error", "tools": {"*": {"max_tokens": 30}}},
}


def sources(corpora: Path | None, rng: random.Random) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if corpora is not None and corpora.is_dir():
        for f in sorted(corpora.glob("*/*.json")):
            out.append((f"{f.parent.name}/{f.stem}", json.loads(f.read_text(encoding="utf-8"))))
    for fmt in ctxwin.FORMATS:
        for n in range(3):
            rounds = [
                [
                    (
                        f"tool{j}",
                        {"q": "x" * rng.randint(1, 90)},
                        " ".join(["w"] * rng.randint(0, 60)),
                    )
                    for j in range(rng.randint(1, 3))
                ]
                for _ in range(rng.randint(1, 8))
            ]
            out.append((f"gen/{fmt}-{n}", agent_body(rounds, format=fmt, final="ok")))
    return out


def damaged(body: Any, rng: random.Random) -> Any:
    fmt = ctxwin.detect(body)
    adapter = ctxwin.formats.get_adapter(fmt)
    body = adapter.listed(body)
    items = list(adapter.items_of(body))
    user = ctxwin.parse(agent_body([], format=fmt, task="are you there?")).messages[-1].raw
    for _ in range(rng.randint(1, 3)):
        if not items:
            break
        i = rng.randrange(len(items))
        op = rng.choice(["drop", "duplicate", "move", "inject", "truncate", "swap", "none"])
        if op == "drop" and len(items) > 1:
            del items[i]
        elif op == "duplicate":
            items.insert(i + 1, copy.deepcopy(items[i]))
        elif op == "move":
            items.insert(rng.randrange(len(items)), items.pop(i))
        elif op == "inject":
            items.insert(i, copy.deepcopy(user))
        elif op == "truncate" and i > 0:
            del items[i:]
        elif op == "swap" and i + 1 < len(items):
            items[i], items[i + 1] = items[i + 1], items[i]
    if isinstance(body, dict):
        return {**body, adapter.container: items}
    return items


def policy(config: dict[str, Any]) -> ctxwin.Policy:
    return ctxwin.Policy(config, counter=FakeCounter())


def one(body: Any, config: dict[str, Any]) -> list[str]:
    """The failures of one case (empty: it held)."""
    before = copy.deepcopy(body)
    try:
        result = policy(config).apply(body)
    except ctxwin.BudgetExceeded:
        return [] if body == before else ["mutated"]
    except ctxwin.InputError:
        return [] if body == before else ["mutated"]
    out = result.request
    fmt = result.report.format
    problems = []
    if body != before:
        problems.append("mutated")
    if ctxwin.check(out, format=fmt):
        problems.append("invalid_output")
    if not ctxwin.parse(out, format=fmt).messages:
        problems.append("empty_output")
    again = policy(config).apply(out, format=fmt)
    if again.request != out:
        problems.append("not_idempotent_body")
    elif again.report.edits:
        problems.append("not_idempotent_edits")
    items = ctxwin.formats.get_adapter(fmt).items_of(ctxwin.formats.get_adapter(fmt).listed(body))
    if len(items) > 1:
        warm = policy(config)
        shorter = (
            {**body, ctxwin.formats.get_adapter(fmt).container: list(items)[:-1]}
            if isinstance(body, dict)
            else list(items)[:-1]
        )
        with contextlib.suppress(ctxwin.CtxwinError):
            warm.apply(shorter, format=fmt)
        if warm.apply(body, format=fmt).request != out:
            problems.append("order_dependent")
    return problems


def run(pool: list[tuple[str, Any]], cases: int, rng: random.Random) -> list[str]:
    """Run ``cases`` cases over the sources (each source under each policy in turn);
    returns one line per failure: ``case N source policy: kind``."""
    failures = []
    for n in range(cases):
        name, body = pool[n % len(pool)]
        pname = list(POLICIES)[(n // len(pool)) % len(POLICIES)]
        case = damaged(body, rng)
        try:
            found = one(case, POLICIES[pname])
        except Exception as e:
            found = [f"raised {type(e).__name__}: {str(e)[:80]}"]
        failures.extend(f"case {n} {name} policy {pname}: {f}" for f in found)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_800)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpora", type=Path, default=REPO.parent / "shared" / "corpora")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = sources(args.corpora, rng)
    found = run(pool, args.cases, rng)
    kinds: Counter[str] = Counter(f.split(": ", 1)[1].split(":")[0] for f in found)
    examples = found[:12]
    failed = len(found)
    print(f"cases {args.cases} (seed {args.seed}, {len(pool)} sources, {len(POLICIES)} policies)")
    print(f"failures {failed}" + ("".join(f"\n  {k}: {v}" for k, v in kinds.most_common())))
    for e in examples:
        print("  " + e)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
