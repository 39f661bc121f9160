"""An original the window clears is in the store, with a fresh TTL, from the first request
whose placeholder quotes its handle, on every store.

The window used to keep a result's original when it planned to clear it (the result leaves
the kept rounds), not when it first sent the placeholder. A result that waited longer than
the TTL for its jump was sent with a placeholder quoting an original that had expired (the
conversation was not due a look: one every TTL/2, so another worker on the store answered
"unknown handle"); one planned while the store was down was cleared long after without a
handle. The jump keeps it now. Time is a fake clock shared by the shelf and the store (for
Redis, whose expiry is the server's, the keys' TTLs are shortened on the server as the
clock moves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._shelf as shelf_module
from ctxwin import StoreError
from ctxwin.stores import Store
from ctxwin.stores.memory import MemoryStore
from tests.stores.fake_time import Clock, install, two_workers

TTL = 60.0  # a look every 30 s of the fake clock (Shelf.life)
RULES: dict[str, Any] = {
    "context_window": 8000,
    "tokenizer": "o200k_base",
    "recall": True,
    "window": {"keep_rounds": 1, "strategy": "threshold", "trigger": 0.6, "target": 0.4},
}
HANDLE = re.compile(r"r-[0-9a-f]{16}")
BIG = " ".join(f"r1-{i}" for i in range(600))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return install(monkeypatch, 900.0)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def shared(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[Any]:
    """Two policies (two workers) on one store with a TTL."""
    yield from two_workers(request, clock, tmp_path, RULES, TTL)


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


class History:
    """An Anthropic conversation growing a round at a time."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]

    def round(self, i: int, text: str) -> None:
        call = {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {}}
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}
        self.messages.append({"role": "assistant", "content": [call]})
        self.messages.append({"role": "user", "content": [result]})

    def apply(self, policy: ctxwin.Policy) -> ctxwin.Result:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": list(self.messages)}
        return policy.apply(body)


def cleared_late(
    policy: ctxwin.Policy, clock: Clock, before_jump: Callable[[], None] = lambda: None
) -> tuple[History, ctxwin.Result]:
    """Round 1's big result is planned at 1000 (round 2 comes), the conversation is looked
    at at 1031 and 1062 (not quoting it yet), and the jump clears it at 1070: past the TTL
    of the put made when it was planned, within half a TTL of the last look."""
    history = History()
    history.round(1, BIG)
    clock.at(999.0)
    history.apply(policy)  # a new conversation: looked at
    for i, when in [(2, 1000.0), (3, 1031.0), (4, 1062.0)]:
        history.round(i, words(10, f"r{i}-"))
        clock.at(when)
        out = history.apply(policy)
        assert not HANDLE.findall(str(out.request))  # nothing cleared yet
    history.round(5, words(900, "r5-"))
    clock.at(1070.0)
    before_jump()
    out = history.apply(policy)
    return history, out


def test_a_result_cleared_past_the_ttl_of_its_planned_put_is_recalled_by_another_worker(
    shared: list[ctxwin.Policy], clock: Clock
) -> None:
    worker_a, worker_b = shared
    _, out = cleared_late(worker_a, clock)
    handles = HANDLE.findall(str(out.request["messages"][2]))
    assert len(handles) == 1
    answer = worker_b.recall(handles[0])
    assert not answer.is_error, answer.text
    assert answer.text == BIG
    clock.at(1070.0 + TTL * 0.9)  # the put at the first send lives a whole TTL
    assert worker_b.recall(handles[0]).text == BIG


class Counting:
    """A store that waits on I/O (as a shelf sees it) around a memory store on the fake
    clock, counting its puts; ``down`` makes them fail as a full disk does."""

    url = "counting://"

    def __init__(self) -> None:
        self.inner = MemoryStore(ttl=TTL)
        self.ttl = TTL
        self.puts: list[str] = []
        self.down = False

    def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        if self.down:
            raise StoreError(f"{self.url}: put failed: disk full", url=self.url, operation="put")
        self.puts.append(key)
        self.inner.put(key, value, ttl=ttl)

    def close(self) -> None:
        self.inner.close()


def test_a_request_quoting_nothing_new_makes_no_store_call(clock: Clock) -> None:
    """Each original is put once, by the request that jumps; the requests after it, within
    half a TTL of that look, put none of the originals it quotes again, and planning a
    clearing puts nothing."""
    store = Counting()
    assert isinstance(store, Store)
    policy = ctxwin.load_policy(RULES, store=store)
    history, out = cleared_late(policy, clock)
    t1, t2, t3, t4 = ("recall:" + HANDLE.findall(str(m))[0] for m in out.request["messages"][2:9:2])
    assert [store.puts.count(k) for k in (t1, t2, t3, t4)] == [1, 1, 1, 1]  # all at t=70
    sent = len(store.puts)
    clock.at(1071.0)
    history.apply(policy)  # the same request again (a retry): nothing new
    assert len(store.puts) == sent
    history.round(6, words(10, "r6-"))
    clock.at(1080.0)
    history.apply(policy)  # round 5's result planned: no put
    assert len(store.puts) == sent


def test_a_clearing_whose_original_the_store_fails_to_keep_at_its_jump_quotes_no_handle(
    clock: Clock,
) -> None:
    """The store down when the jump first sends the placeholders: they quote no handle (no
    recall could answer it), each edit and the notes say why, and the request after the
    cool-off sends them as they were (the window's output is not edited again)."""
    store = Counting()
    policy = ctxwin.load_policy(RULES, store=store)
    history, out = cleared_late(policy, clock, lambda: setattr(store, "down", True))
    store.down = False
    cleared = [e for e in out.report.edits if e.step == "window"]
    assert cleared
    assert {e.fallback for e in cleared} == {shelf_module.CLEARED_STORE_DOWN}
    assert not HANDLE.findall(str(out.request))
    assert "store counting:// failed (keeping an original)" in " ".join(out.report.notes)
    clock.at(1070.0 + shelf_module.COOL_OFF + 1)
    assert history.apply(policy).request == out.request


def test_a_result_the_window_can_never_clear_is_not_put_nor_reported_as_a_failure(
    clock: Clock,
) -> None:
    """A result no longer than its placeholder ("ok 3") is never cleared: its original is
    not written to the store, and a store that is down costs such a request no failure."""
    rules = {"context_window": 1_000_000, "recall": True}
    history = History()
    for i in range(30):
        history.round(i, f"ok {i}")
    store = Counting()
    out = history.apply(ctxwin.load_policy(rules, store=store))
    assert (out.report.edits, store.puts) == ((), [])
    store.down = True
    out = history.apply(ctxwin.load_policy(rules, store=store))
    assert (out.report.edits, out.report.notes) == ((), ())


def test_a_clearing_planned_while_the_store_was_down_quotes_its_handle_once_it_is_back(
    clock: Clock,
) -> None:
    """Round 1 leaves the kept rounds during an outage and is cleared after it: its
    placeholder quotes a handle another worker recalls, as a fresh policy's does (what is
    sent does not depend on when the store was down, only on whether it is at the jump)."""
    store = Counting()
    worker_a = ctxwin.load_policy(RULES, store=store)
    history = History()
    history.round(1, BIG)
    clock.at(999.0)
    history.apply(worker_a)
    history.round(2, words(10, "r2-"))
    store.down = True
    clock.at(1000.0)
    history.apply(worker_a)  # round 1 planned (it leaves the kept rounds)
    store.down = False
    history.round(3, words(900, "r3-"))
    clock.at(1000.0 + shelf_module.COOL_OFF + 1)
    out = history.apply(worker_a)  # the jump
    fresh = history.apply(ctxwin.load_policy(RULES, store=store))
    assert out.request == fresh.request
    (handle,) = HANDLE.findall(str(out.request["messages"][2]))
    assert ctxwin.load_policy(RULES, store=store).recall(handle).text == BIG
    assert not [e.fallback for e in out.report.edits if e.fallback]
