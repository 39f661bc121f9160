"""The README and the examples are executed, so the docs cannot rot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctxwin
from ctxwin._policy.schema import PolicyConfig, SummarizeConfig, ToolFile, WindowConfig
from tests.builders import run_example

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_readme_python_blocks_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every Python block, in order, in one namespace (as a reader would paste them)."""
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {"__name__": "readme"}
    code = blocks("python")
    assert len(code) >= 4
    for block in code:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "missing_result [b]" in out


def commands() -> list[str]:
    return [
        line[2:].strip()
        for block in blocks("console")
        for line in block.splitlines()
        if line.startswith("$ ")
    ]


@pytest.mark.parametrize("command", commands())
def test_readme_commands_run(command: str) -> None:
    argv = command.split()
    if argv[0] == "ctxwin":
        argv = [sys.executable, "-m", "ctxwin", *argv[1:]]
    elif argv[0] == "python":
        argv[0] = sys.executable
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout


def test_the_setup_commands_come_first() -> None:
    first, second = blocks("console")[:2]
    assert "ctxwin report examples/requests/openai_chat.json --policy examples/policy" in first
    assert ".venv/bin/pytest" in second
    assert README.index(first) < README.index("## Five-minute tour")


def table_keys(heading: str) -> set[str]:
    section = README.split(heading, 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M))


def test_the_policy_reference_matches_the_schema() -> None:
    assert table_keys("Defaults file:") == set(PolicyConfig.model_fields)
    assert table_keys("`window:`") == set(WindowConfig.model_fields)
    assert table_keys("Tool file (or an entry of `tools:`):") == set(ToolFile.model_fields)
    summarize = set(SummarizeConfig.model_fields)
    assert all(f"{k}" in README for k in summarize)


def example_output(script: str) -> list[str]:
    return run_example(script).splitlines()


def test_the_recall_example_gets_lines_10_to_20_back_exactly() -> None:
    lines = example_output("recall_loop.py")
    start = next(i for i, line in enumerate(lines) if line.startswith("recall "))
    assert '"lines": "10-20"' in lines[start]
    recalled = lines[start + 1 : start + 12]
    assert [int(line.split()[0]) for line in recalled] == list(range(10, 21))
    assert recalled[0] == "  10  src/app.py: setting_10 = 70"
    assert lines[-1].startswith("answer:")


def test_the_example_agent_loop_runs() -> None:
    lines = example_output("agent_loop.py")
    assert lines[0].startswith("turn 0:")
    last = re.search(r"(\d+) ->\s+(\d+) tokens .* window events (\d+)\)", lines[-1])
    assert last is not None
    before, after, events = map(int, last.groups())
    assert events >= 2  # the window jumped more than once over the 8 turns
    assert after < before / 10


@pytest.mark.parametrize("name", ["openai_chat", "anthropic", "openai_responses", "gemini"])
def test_the_example_requests_are_valid_and_the_policy_acts_on_them(name: str) -> None:
    body = json.loads((REPO / "examples" / "requests" / f"{name}.json").read_text(encoding="utf-8"))
    assert ctxwin.detect(body) == name.replace("_", "-")
    assert ctxwin.check(body) == []
    result = ctxwin.load_policy(REPO / "examples" / "policy").apply(body)
    assert ctxwin.check(result.request) == []
    steps = {e.step for e in result.report.edits}
    assert {"select", "cap", "window"} <= steps
    assert result.report.tokens_after < result.report.tokens_before / 3
