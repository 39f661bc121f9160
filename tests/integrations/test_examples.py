"""The LangChain and LangGraph examples run offline, as the README says."""

from __future__ import annotations

import pytest

from tests.builders import run_example


def run(script: str) -> list[str]:
    return run_example(script).splitlines()


def test_the_langchain_agent_example_runs() -> None:
    pytest.importorskip("langchain.agents")
    lines = run("langchain_agent.py")
    assert lines[0].startswith("turn 0: the model got  2 messages")
    assert "window events 2" in lines[-1]


def test_the_langgraph_hitl_example_runs() -> None:
    pytest.importorskip("langgraph.prebuilt")
    lines = run("langgraph_hitl.py")
    assert any("delete_file was declined by the user" in line for line in lines)
    declined = next(i for i, line in enumerate(lines) if "declined" in line)
    assert lines[declined].split()[:2] == ["tool", "error"]
    assert lines[declined + 1].startswith("human")
