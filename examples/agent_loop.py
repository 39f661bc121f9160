"""An agent loop with ctxwin before each request — runs offline with a fake model.

The fake model plays a coding agent: it reads files, runs the tests, searches the code, and
stops after a few turns. Each tool returns a long result, as real tools do. Before every
request the loop calls ``policy.apply(request)`` and sends ``result.request`` instead of the
raw history, then prints a one-line report. The history itself is never modified: ctxwin
returns a new request each time, and results it already edited read the same in every later
request (the provider's prompt cache stays warm).

Run:  python examples/agent_loop.py            (or: python examples/agent_loop.py --verbose)

With a real model, replace ``fake_model(request)`` by your SDK call, e.g.
``client.chat.completions.create(**result.request)`` (OpenAI) — see the README.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ctxwin

HERE = Path(__file__).resolve().parent


def read_file(path: str) -> str:
    lines = [f"{i:4d}  value_{i} = compute(order, rate)  # {path}" for i in range(1, 400)]
    return "\n".join(lines)


def run_tests(path: str) -> str:
    passed = [f"tests/test_{i}.py::test_case PASSED" for i in range(300)]
    return "\n".join(
        [
            *passed,
            "FAILED tests/test_totals.py::test_totals - AssertionError",
            "1 failed, 300 passed",
        ]
    )


def search_code(query: str) -> str:
    hits = [
        {"path": f"src/m{i}.py", "line": i, "text": f"{query} = Decimal(rate_{i})"}
        for i in range(60)
    ]
    return json.dumps({"matches": hits})


TOOLS = {"read_file": read_file, "run_tests": run_tests, "search_code": search_code}
PLAN: list[tuple[str, dict[str, str]]] = [
    ("run_tests", {"path": "tests/"}),
    ("search_code", {"query": "rate"}),
    ("read_file", {"path": "src/totals.py"}),
    ("read_file", {"path": "src/currency.py"}),
    ("run_tests", {"path": "tests/test_totals.py"}),
    ("read_file", {"path": "src/rates.py"}),
    ("run_tests", {"path": "tests/"}),
]


def fake_model(request: dict[str, Any], turn: int) -> dict[str, Any]:
    """The assistant message a model would answer with: the next tool call, or a final text."""
    if turn >= len(PLAN):
        return {"role": "assistant", "content": "Done: the totals are fixed."}
    name, args = PLAN[turn]
    call = {
        "id": f"call_{turn}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def main(verbose: bool = False) -> int:
    policy = ctxwin.load_policy(HERE / "policy", format="openai-chat")
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "The totals test fails. Fix it."},
    ]
    for turn in range(len(PLAN) + 1):
        result = policy.apply({"model": "gpt-4o", "messages": history})
        report = result.report
        print(
            f"turn {turn}: {len(history):2d} messages, {report.tokens_before:6d} -> "
            f"{report.tokens_after:5d} tokens ({report.saved} saved, "
            f"{len(report.edits)} edits, window events {report.window_events})"
        )
        if verbose:
            print(report.to_text())
        reply = fake_model(result.request, turn)  # type: ignore[arg-type]
        history.append(reply)
        for call in reply.get("tool_calls") or []:
            args = json.loads(call["function"]["arguments"])
            output = TOOLS[call["function"]["name"]](**args)
            history.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        if not reply.get("tool_calls"):
            break
    assert ctxwin.check(result.request) == []
    return 0


if __name__ == "__main__":
    sys.exit(main(verbose="--verbose" in sys.argv))
