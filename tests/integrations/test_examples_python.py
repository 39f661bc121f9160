"""The integration examples run offline and show the request cut down, the history whole."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.builders import run_example


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
    out = run_example(script, timeout=300)
    before, after = map(int, re.search(r"(\d+) -> (\d+) tokens", out).groups())
    assert after < before / 10
