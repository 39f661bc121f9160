"""The integration examples run offline and show the request cut down, the history whole."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "framework"),
    [
        ("pydantic_ai_agent.py", "pydantic_ai"),
        ("openai_agents_agent.py", "agents"),
        ("litellm_proxy.py", "litellm"),
    ],
)
def test_the_example_runs_offline(script: str, framework: str) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    done = subprocess.run(
        [sys.executable, f"examples/{script}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    before, after = map(int, re.search(r"(\d+) -> (\d+) tokens", done.stdout).groups())
    assert after < before / 10
