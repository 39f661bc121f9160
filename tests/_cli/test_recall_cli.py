"""``ctxwin recall``: what ``ctxwin apply`` kept, from the CLI's SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxwin.steps._shelf import HANDLE_RE
from ctxwin.testing import agent_body

ROOT = Path(__file__).resolve().parents[2]
BIG = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 400))
POLICY = "context_window: 20000\nrecall: true\ntools:\n  read_file: {max_tokens: 500}\n"


def ctxwin_cli(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxwin", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    body = agent_body([[("read_file", {"path": f"f{i}"}, f"{BIG}\nfile {i}")] for i in range(6)])
    (tmp_path / "req.json").write_text(json.dumps(body), encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("CTXWIN_STORE", None)
    return tmp_path / "policy.yaml", tmp_path / "req.json", env


def test_recall_prints_what_apply_kept(setup: tuple[Path, Path, dict[str, str]]) -> None:
    policy, request, env = setup
    done = ctxwin_cli("apply", request, "-p", policy, env={**env, "CTXWIN_STORE": ""})
    assert done.returncode == 0, done.stderr
    assert (request.parent / "cache" / "ctxwin" / "store.db").is_file()
    handles = sorted(set(HANDLE_RE.findall(done.stdout)))
    assert len(handles) == 6
    originals = {f"{BIG}\nfile {i}" for i in range(6)}
    for h in handles:
        got = ctxwin_cli("recall", h, "-p", policy, env=env)
        assert got.returncode == 0, got.stderr
        assert got.stdout in originals
    part = ctxwin_cli("recall", handles[0], "-p", policy, "--lines", "2-3", env=env)
    assert part.stdout == "line 2: " + "x" * 60 + "\nline 3: " + "x" * 60 + "\n"


def test_an_unknown_handle_exits_1_and_says_so(setup: tuple[Path, Path, dict[str, str]]) -> None:
    policy, _request, env = setup
    done = ctxwin_cli("recall", "r-000000000000", "-p", policy, env=env)
    assert done.returncode == 1
    assert "unknown handle r-000000000000" in done.stderr
    assert "Traceback" not in done.stderr


def test_store_names_another_store(
    setup: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    policy, request, env = setup
    url = f"sqlite:///{tmp_path / 'other.db'}"
    done = ctxwin_cli("apply", request, "-p", policy, "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    h = sorted(set(HANDLE_RE.findall(done.stdout)))[0]
    assert ctxwin_cli("recall", h, "-p", policy, "--store", url, env=env).returncode == 0
    assert ctxwin_cli("recall", h, "-p", policy, env=env).returncode == 1  # not in the default
    bad = ctxwin_cli("recall", h, "-p", policy, "--store", "ftp://x", env=env)
    assert bad.returncode == 2
    assert "unknown store" in bad.stderr


HUGE_COUNT = "a{" + "9" * 5000 + "}"


def test_a_part_that_cannot_be_asked_for_is_bad_usage(
    setup: tuple[Path, Path, dict[str, str]],
) -> None:
    """``--lines abc`` exited 1, as for an unknown handle; bad usage exits 2 (a pattern that
    runs too long still exits 1: ``test_recall_grep``)."""
    policy, request, env = setup
    done = ctxwin_cli("apply", request, "-p", policy, env=env)
    h = sorted(set(HANDLE_RE.findall(done.stdout)))[0]
    for option, value, said in [
        ("--lines", "abc", "lines must be a range such as 10-20, not 'abc'"),
        ("--lines", "20-10", "lines 20-10 is not a range (1-based, a <= b)"),
        ("--lines", "500-600", f"lines 500-600 are past the end: {h} has 400 lines"),
        ("--grep", "(", "grep '(' is not a regular expression: missing ), unterminated"),
        (  # a count int() refuses: a ValueError the command did not catch ("unexpected")
            "--grep",
            HUGE_COUNT,
            f"grep {HUGE_COUNT!r:.60} is not a regular expression: Exceeds the limit (4300",
        ),
    ]:
        bad = ctxwin_cli("recall", h, "-p", policy, option, value, env=env)
        assert (bad.returncode, bad.stdout) == (2, ""), value
        assert bad.stderr.startswith(f"ctxwin: error: {said}"), bad.stderr
    unknown = ctxwin_cli("recall", "r-000000000000", "-p", policy, "--lines", "abc", env=env)
    assert unknown.returncode == 1  # the handle is what is wrong
    assert "unknown handle r-000000000000" in unknown.stderr
