"""Ctrl-C during ``ctxwin replay --jobs``: one line, exit status 130, no worker left behind.

Each test runs the command in a session of its own, waits until the two short traces are
replayed (the progress bar says 2/3) while a long one still runs, and interrupts it as a
terminal's Ctrl-C does (every process of the group) or as ``kill -INT`` does (the command
alone). The long trace would take minutes: a command that waited for its worker would not
end before the test's guard.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.builders import SMALL_POLICY_YAML, chat, coding_body, long_output

ROOT = Path(__file__).resolve().parents[2]
GUARD = 90
"""Seconds before a command that did not stop is called hung (the long trace takes many
times longer)."""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@pytest.fixture(scope="module")
def args(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("interrupt")
    long = chat([[("bash", long_output(30, f"r{k}"))] for k in range(1500)])
    paths = []
    for name, body in [("long", long), ("a", coding_body()), ("b", coding_body())]:
        path = d / f"{name}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        paths.append(str(path))
    policy = d / "policy.yaml"
    policy.write_text(SMALL_POLICY_YAML, encoding="utf-8")
    return ["replay", *paths, "-p", str(policy), "--jobs", "3", "--progress", "--optimum"]


def _group(pgid: int) -> list[int]:
    """The live processes of a process group (zombies included: not reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def _interrupt(args: list[str], whole_group: bool) -> tuple[int, str, list[int]]:
    """Run, interrupt after two traces, and return the status, stderr and what is left."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxwin", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    assert proc.stderr is not None
    err = bytearray()
    two_done = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read1(4096):
            err.extend(chunk)
            if b"] 2/3 " in err:
                two_done.set()
        two_done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert two_done.wait(GUARD), "the short traces were not replayed"
        assert b"] 3/3 " not in err
        if whole_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(GUARD)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(GUARD)
    proc.stderr.close()
    return code, err.decode(errors="replace"), _group(proc.pid)


@pytest.mark.parametrize("whole_group", [True, False], ids=["ctrl-c", "kill-int"])
def test_an_interrupted_parallel_replay_stops_its_workers_and_says_so_once(
    args: list[str], whole_group: bool
) -> None:
    code, err, left = _interrupt(args, whole_group)
    assert code == 130
    assert "Traceback" not in err
    assert err.rsplit("\r", 1)[-1].strip() == "ctxwin: interrupted"
    assert left == []
