"""``--keep-going`` on a JSON Lines file: a line that cannot be read is one failure of its
own (``file:line``), and the file's other lines are replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxwin.testing import agent_body
from tests._cli.kit import cli


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Three whole traces, then the line being written when the log was copied."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lines = [
        json.dumps(agent_body([[("read_file", {"path": f"f{i}"}, "x " * 300)] for i in range(k)]))
        for k in (2, 3, 4)
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join([*lines, lines[0][:60]]) + "\n", encoding="utf-8")
    policy = tmp_path / "p.yaml"
    policy.write_text("context_window: 8000\n", encoding="utf-8")
    return path, policy


@pytest.mark.parametrize("command", ["replay", "tune"])
def test_a_bad_line_is_skipped_alone(
    log: tuple[Path, Path], capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The whole file was skipped, and the run ended "none of the 1 traces could be
    replayed"."""
    path, policy = log
    extra = ["-j", "1"] if command == "replay" else ["--holdout", "0"]
    code, out, err = cli([command, path, "-p", policy, "-k", "--no-progress", *extra], capsys)
    assert code == 2
    if command == "replay":
        assert [f"traces.jsonl:{i}" in out for i in (1, 2, 3, 4)] == [True, True, True, False]
    else:
        assert "3 training traces" in out
    assert err == (
        f"ctxwin {command}: skipped {path}:4:53: invalid JSON: Unterminated string starting at\n"
    )


def test_without_keep_going_a_bad_line_stops_the_run(
    log: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path, policy = log
    code, out, err = cli(["replay", path, "-p", policy, "-j", "1", "--no-progress"], capsys)
    assert (code, out) == (2, "")
    assert err == f"ctxwin: error: {path}:4:53: invalid JSON: Unterminated string starting at\n"
