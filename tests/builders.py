"""The tests' one set of request builders (OpenAI-chat pieces and small agent bodies).

Built on :func:`ctxwin.testing.agent_body`, which users get too.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxwin.testing import agent_body

SMALL_POLICY: dict[str, Any] = {
    "context_window": 4000,
    "window": {"strategy": "threshold"},
    "tools": {"*": {"max_tokens": 50}},
}
"""Every tool result capped at 50 tokens, in a 4,000-token window cleared by size only."""

SMALL_POLICY_YAML = (
    'context_window: 4000\nwindow:\n  strategy: threshold\ntools:\n  "*":\n    max_tokens: 50\n'
)


# ------------------------------------------------------------------------------ chat pieces


def call(cid: str, name: str, args: dict[str, Any] | str | None = None) -> dict[str, Any]:
    """An OpenAI-chat tool call (``args`` a dict, or JSON text as it is)."""
    arguments = args if isinstance(args, str) else json.dumps(args or {})
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def asst(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        m["tool_calls"] = list(calls)
    return m


def tool(cid: str, content: str, name: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "tool", "tool_call_id": cid, "content": content}
    if name is not None:
        m["name"] = name
    return m


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def sealed(tokens: int, fill: str = "x") -> str:
    """An OpenAI reasoning item's ``encrypted_content`` worth ``tokens`` input tokens, as the
    Responses adapter counts one (``ENCRYPTED_REASONING``)."""
    from ctxwin.formats.openai_responses import ENCRYPTED_REASONING

    rate = ENCRYPTED_REASONING
    return "gAAA" + fill * (rate.fixed + rate.per * tokens - 4)


def words(n: int, word: str = "data") -> str:
    return " ".join([word] * n)


def history(rounds: int, size: int = 100, name: str = "read_file") -> list[dict[str, Any]]:
    """system, user, then ``rounds`` rounds of one call with a ``size``-word result."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Do the task."},
    ]
    for r in range(rounds):
        msgs.append(asst(call(f"c{r}", name, {"path": f"f{r}.py"})))
        msgs.append(tool(f"c{r}", words(size, f"w{r}")))
    return msgs


# ------------------------------------------------------------------------------ agent bodies


def long_output(lines: int, tag: str = "line") -> str:
    return "\n".join(
        f"{tag} {i}: FAILED test_case_{i} - AssertionError: {i * 7} != {i}" for i in range(lines)
    )


def chat(
    rounds: Sequence[Sequence[tuple[str, str]]],
    *,
    final: str | None = "Done.",
    missing: Sequence[str] = (),
) -> dict[str, Any]:
    """An OpenAI-chat coding-agent body: per round one assistant turn calling each
    ``(tool, result)`` of the round (arguments ``{"n": call id}``), and their results;
    ``missing`` lists call ids whose results are left out (a pairing problem)."""
    n = 0
    uses = []
    for calls in rounds:
        uses.append([(t, {"n": f"call_{n + i + 1}"}, res) for i, (t, res) in enumerate(calls)])
        n += len(calls)
    return agent_body(
        uses,
        system="You are a coding agent.",
        task="Fix the failing test.",
        final=final,
        missing=missing,
    )


def coding_body() -> dict[str, Any]:
    """Two rounds: ``bash`` and ``read_file`` with long results, then a short ``bash``."""
    return chat(
        [
            [("bash", long_output(200)), ("read_file", "def f():\n    return 1\n" * 100)],
            [("bash", "a.py b.py")],
        ]
    )


REPO = Path(__file__).resolve().parents[1]


def run_example(script: str, timeout: float = 120) -> str:
    """What ``examples/<script>`` prints, run from the repository root as a reader would."""
    done = subprocess.run(
        [sys.executable, f"examples/{script}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def benchmark_module(name: str) -> Any:
    """A module of ``benchmarks/`` (not a package), loaded from its file; its imports of
    the other benchmark modules resolve while it loads."""
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(benchmarks))
    try:
        spec = importlib.util.spec_from_file_location(
            f"ctxwin_bench_{name}", benchmarks / f"{name}.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # a dataclass in it looks its module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(benchmarks))
