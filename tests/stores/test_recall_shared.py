"""Recall and summaries shared between processes through one store (SQLite, Redis)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin.steps._shelf import HANDLE_RE, handle_of
from ctxwin.stores import open_store
from ctxwin.testing import FakeSummarizer, agent_body
from tests.stores.conftest import RedisServer

REPO = Path(__file__).resolve().parents[2]

WORKER = r"""
import json, sys
import ctxwin
from ctxwin.stores.redis import RedisStore
from ctxwin.testing import FakeSummarizer, agent_body

url, prefix, mode = sys.argv[1], sys.argv[2], sys.argv[3]
words = " ".join(f"w{i}" for i in range(3000))
body = agent_body([[("read_file", {"path": f"f{n}"}, f"{words} {n}")] for n in range(6)])
rules = {
    "context_window": 12000,
    "recall": True,
    "window": {"keep_rounds": 1},
    "tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}},
}
summarizer = FakeSummarizer()
# a Redis shared by test runs: keys of this run's own (the session deletes ctxwin:test-*)
store = RedisStore(url, prefix=prefix) if url.startswith("redis") else url
policy = ctxwin.load_policy(rules, summarizer=summarizer, store=store)
if mode == "apply":
    out = policy.apply(body)
    print(json.dumps({"calls": len(summarizer.calls), "request": out.request,
                      "notes": list(out.report.notes)}))
else:
    answers = {h: policy.recall(h).text for h in sys.argv[4:]}
    print(json.dumps({"answers": answers, "words": words}))
"""


def run(url: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, url, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def shared_by_two_processes(url: str) -> None:
    prefix = f"ctxwin:test-{uuid.uuid4().hex}:"
    first = run(url, prefix, "apply")
    second = run(url, prefix, "apply")
    assert first["calls"] == 6
    assert second["calls"] == 0  # every summary came from the store
    assert first["request"] == second["request"]
    assert not first["notes"]
    assert not second["notes"]
    handles = sorted(set(HANDLE_RE.findall(json.dumps(first["request"]))))
    assert len(handles) == 6
    third = run(url, prefix, "recall", *handles)
    words = third["words"]
    assert sorted(third["answers"].values()) == sorted(f"{words} {n}" for n in range(6))


def test_two_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    shared_by_two_processes(f"sqlite:///{tmp_path / 'store.db'}")


@pytest.mark.redis
def test_two_processes_share_one_redis(redis_url: str) -> None:
    shared_by_two_processes(redis_url)


# ---------------------------------------------------------------------- faults, end to end


def reads(n: int) -> list[list[tuple[str, dict[str, Any], str]]]:
    big = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 400))
    return [[("read_file", {"path": f"f{i}"}, f"{big}\nfile {i}")] for i in range(n)]


RULES = {
    "context_window": 20_000,
    "recall": True,
    "window": {"keep_rounds": 2},
    "tools": {"read_file": {"max_tokens": 2000}},
}


def handles_in(body: object) -> set[str]:
    return set(HANDLE_RE.findall(json.dumps(body)))


@pytest.mark.redis
@pytest.mark.parametrize("fault", ["killed", "paused"])
def test_a_redis_that_dies_or_hangs_mid_run_never_breaks_a_request(
    own_redis: RedisServer, fault: str
) -> None:
    policy = ctxwin.load_policy({**RULES, "store": {"url": own_redis.url, "timeout": 0.3}})
    before = policy.apply(agent_body(reads(6)))
    kept = handles_in(before.request)
    assert kept
    assert all(not policy.recall(h).is_error for h in kept)
    if fault == "killed":
        own_redis.kill()
    else:
        own_redis.pause()
    try:
        after = policy.apply(agent_body(reads(10)))
        assert ctxwin.check(after.request) == []
        notes = " ".join(after.report.notes)
        assert f"store {own_redis.url} failed" in notes
        assert ("Timeout" in notes) if fault == "paused" else ("Connection" in notes)
        fallbacks = [e for e in after.report.edits if e.fallback]
        assert fallbacks
        assert all(e.fallback.startswith("store_down") for e in fallbacks)  # type: ignore[union-attr]
        # results shortened while the store was down quote no handle: nothing unresolvable
        assert handles_in(after.request) <= kept
        # what the policy put, it still holds in memory: recall answers that all the same
        assert not policy.recall(sorted(kept)[0]).is_error
        elsewhere = policy.recall(handle_of("an original another process kept"))
        assert elsewhere.is_error
        assert elsewhere.text.startswith("recall: the store is unavailable")
    finally:
        own_redis.stop()


def test_a_corrupted_value_is_an_error_answer_or_a_summary_made_here(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    policy = ctxwin.load_policy({**RULES, "store": url})
    out = policy.apply(agent_body(reads(6)))
    handle = sorted(handles_in(out.request))[0]
    store = open_store(url)
    store.put(f"recall:{handle}", b"not what was kept")
    other = ctxwin.load_policy({**RULES, "store": url})  # holds no original in memory
    answer = other.recall(handle)
    assert answer.is_error
    assert "corrupted" in answer.text
    # the policy that put it holds the original in memory: answered, and put back
    assert not policy.recall(handle).is_error
    assert not other.recall(handle).is_error
    words = " ".join(f"w{i}" for i in range(3000))
    rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
    body = agent_body([[("read_file", {}, words)]])
    first = FakeSummarizer()
    ctxwin.load_policy(rules, summarizer=first, store=url).apply(body)
    assert len(first.calls) == 1
    with sqlite3.connect(tmp_path / "store.db") as db:
        db.execute("UPDATE ctxwin_store SET value = ? WHERE key LIKE 'summary:%'", (b"\xff\xfe",))
    second = FakeSummarizer()
    out = ctxwin.load_policy(rules, summarizer=second, store=url).apply(body)
    assert len(second.calls) == 1  # the damaged summary was not used: made again here
    assert any("summary" in n for n in out.report.notes)
    assert [e.step for e in out.report.edits] == ["summarize"]


@pytest.mark.redis
def test_originals_a_flushed_redis_lost_are_kept_again_once_recall_misses_one(
    own_redis: RedisServer,
) -> None:
    """A Redis that restarts without persistence (or is flushed) loses every original. The
    policy remembered having put them and, without a TTL, never sent them again: every
    handle its requests quoted stayed unknown for the life of the process."""
    redis = pytest.importorskip("redis")
    policy = ctxwin.load_policy({**RULES, "store": own_redis.url})  # no ttl: the default
    kept = handles_in(policy.apply(agent_body(reads(6))).request)
    assert kept
    redis.Redis(port=own_redis.port).flushall()
    lost = sorted(kept)[0]
    answer = policy.recall(lost)
    assert not answer.is_error  # the shelf had it in memory: answered, and put back
    other = ctxwin.load_policy({**RULES, "store": own_redis.url})  # a worker without memory
    assert not other.recall(lost).is_error
    again = policy.apply(agent_body(reads(6)))  # the agent's next request: a new body
    assert handles_in(again.request) == kept
    assert [h for h in kept if other.recall(h).is_error] == []
