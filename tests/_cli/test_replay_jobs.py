"""``ctxwin replay --jobs``: traces replayed in worker processes, same results, in order."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests._cli.kit import cli, small_policy
from tests.builders import SMALL_POLICY_YAML, chat, coding_body


@pytest.fixture
def traces(tmp_path: Path) -> list[Path]:
    bodies = [
        coding_body(),
        chat([[("bash", "ok " * 50), ("bash", "ok too " * 40)]] * 4),
        chat([[("bash", "x " * 300)]] * 6),
    ]
    paths = []
    for i, body in enumerate(bodies):
        path = tmp_path / f"t{i}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return small_policy(tmp_path)


def test_worker_processes_give_the_serial_results_in_input_order(
    traces: list[Path], policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args: list[str | Path] = ["replay", *traces, "-p", policy, "--optimum", "--json"]
    serial = cli([*args, "--jobs", "1"], capsys)
    parallel = cli([*args, "--jobs", "2"], capsys)
    assert serial[0] == 0
    assert parallel == serial
    names = [t["trace"] for t in json.loads(parallel[1])["traces"]]
    assert names == [str(t) for t in traces]


def test_a_failing_trace_is_reported_alike_in_workers(
    traces: list[Path], policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"messages": "not a list"}), encoding="utf-8")
    args: list[str | Path] = ["replay", traces[0], bad, traces[1], "-p", policy]
    code, out, err = cli([*args, "--jobs", "2"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"ctxwin: error: {bad}")
    assert cli([*args, "--jobs", "1"], capsys) == (code, out, err)


def test_progress_is_drawn_only_when_asked_off_a_terminal(
    traces: list[Path], policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args: list[str | Path] = ["replay", *traces, "-p", policy, "--jobs", "2"]
    assert cli(args, capsys)[2] == ""  # stderr is not a terminal here
    code, _, err = cli([*args, "--progress"], capsys)
    assert code == 0
    assert "ctxwin replay [" in err
    assert "] 3/3 " in err


def test_jobs_must_be_positive(
    traces: list[Path], policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(["replay", *traces, "-p", policy, "--jobs", "0"], capsys)
    assert code == 2
    assert "--jobs 0: give 1 (in this process) or more worker processes" in err


def test_keep_going_replays_the_other_traces_and_names_the_skipped_ones(
    traces: list[Path], policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--keep-going``: a trace that cannot be replayed (bad structure) or read (not JSON)
    is named on stderr, the others are reported, and the exit status is still that of bad
    input; alike in workers."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"messages": "not a list"}), encoding="utf-8")
    unreadable = tmp_path / "torn.json"
    unreadable.write_text('{"messages": [', encoding="utf-8")
    args: list[str | Path] = [
        "replay",
        traces[0],
        bad,
        traces[1],
        unreadable,
        "-p",
        policy,
        "--json",
        "-k",
    ]
    code, out, err = cli([*args, "--jobs", "2"], capsys)
    assert code == 2
    names = [t["trace"] for t in json.loads(out)["traces"]]
    assert names == [str(traces[0]), str(traces[1])]
    skipped = [line for line in err.splitlines() if line.startswith("ctxwin replay: skipped ")]
    assert len(skipped) == 2
    assert skipped[0].startswith(f"ctxwin replay: skipped {unreadable}:1:")  # file and line
    assert skipped[1].startswith(f"ctxwin replay: skipped {bad}: ")
    assert cli([*args, "--jobs", "1"], capsys) == (code, out, err)
    # without it, the first failure stops the replay as before
    assert cli(args[:-1], capsys)[:2] == (2, "")


def test_keep_going_with_nothing_replayable_is_an_error(
    policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"messages": "not a list"}), encoding="utf-8")
    code, out, err = cli(["replay", bad, "-p", policy, "--keep-going"], capsys)
    assert (code, out) == (2, "")
    assert f"ctxwin replay: skipped {bad}" in err
    assert "none of the 1 traces could be replayed" in err


def test_workers_load_the_policy_as_the_command_was_told(
    traces: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--follow-symlinks`` reaches the workers: they refused the folder's link, each with a
    traceback, and the command ended on an "unexpected BrokenProcessPool"."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "bash.yaml").write_text("tool: bash\nmax_tokens: 30\n", encoding="utf-8")
    folder = tmp_path / "linked"
    folder.mkdir()
    (folder / "defaults.yaml").write_text(SMALL_POLICY_YAML, encoding="utf-8")
    (folder / "bash.yaml").symlink_to(outside / "bash.yaml")
    args: list[str | Path] = ["replay", *traces, "-p", folder, "--follow-symlinks", "--json"]
    serial = cli([*args, "--jobs", "1"], capsys)
    assert serial[0] == 0
    assert cli([*args, "--jobs", "2"], capsys) == serial
    code, out, err = cli([*args[:-2], "--jobs", "2"], capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "a symbolic link to a file outside the policy folder" in err


def _pipe(text: str) -> Path:
    """A path that can be read once, as ``-p <(printf ...)`` gives: a pipe's /dev/fd/N."""
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return Path(f"/dev/fd/{read}")


def test_workers_replay_the_policy_the_command_read(
    traces: list[Path], policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workers replay the policy the command loaded, not what its path holds when they
    start: a pipe (``-p <(...)``, ``-p /dev/stdin``) was empty for them, and they replayed
    the default policy, with other figures and exit 0."""
    text = policy.read_text(encoding="utf-8")
    args: list[str | Path] = ["replay", *traces, "--json"]
    expected = cli([*args, "-p", policy, "--jobs", "1"], capsys)
    for jobs in ("1", "2"):
        piped = _pipe(text)
        try:
            assert (jobs, cli([*args, "-p", piped, "--jobs", jobs], capsys)) == (jobs, expected)
        finally:
            os.close(int(piped.name))
