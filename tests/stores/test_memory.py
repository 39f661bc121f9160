"""The in-process store: values by key, expiry, the per-value limit and the total bound."""

from __future__ import annotations

import pytest

from ctxwin import StoreError
from ctxwin.stores import MemoryStore, Store, open_store
from ctxwin.stores import memory as memory_module


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(memory_module.time, "monotonic", c.monotonic)
    return c


def test_open_store_memory_gives_a_store_that_round_trips() -> None:
    store = open_store("memory")
    assert isinstance(store, Store)
    store.put("k", b"v")
    assert store.get("k") == b"v"
    assert store.get("other") is None


def test_a_put_replaces_the_value() -> None:
    store = MemoryStore()
    store.put("k", b"one")
    store.put("k", b"two")
    assert store.get("k") == b"two"
    assert len(store) == 1


def test_a_value_expires_after_its_ttl(clock: Clock) -> None:
    store = MemoryStore(ttl=10)
    store.put("default", b"a")
    store.put("own", b"b", ttl=100)
    clock.now += 9.9
    assert store.get("default") == b"a"
    clock.now += 0.1
    assert store.get("default") is None
    assert store.get("own") == b"b"


def test_a_value_over_max_bytes_is_refused_and_the_old_one_kept() -> None:
    store = MemoryStore(max_bytes=4)
    store.put("k", b"1234")
    with pytest.raises(StoreError, match="5 bytes is over the store's limit of 4") as e:
        store.put("k", b"12345")
    assert (e.value.operation, e.value.url) == ("put", "memory")
    assert store.get("k") == b"1234"


def test_the_least_recently_used_value_goes_first_over_max_total() -> None:
    store = MemoryStore(max_total=10)
    store.put("a", b"aaaa")
    store.put("b", b"bbbb")
    assert store.get("a") == b"aaaa"  # a is now the most recently used
    store.put("c", b"cccc")
    assert store.get("b") is None
    assert store.get("a") == b"aaaa"
    assert store.get("c") == b"cccc"


def test_an_unknown_scheme_is_a_store_error_with_the_password_masked() -> None:
    with pytest.raises(StoreError, match="unknown store") as e:
        open_store("mongodb://user:hunter2@host/db")
    assert "hunter2" not in str(e.value)
    assert e.value.url == "mongodb://user:***@host/db"
    assert e.value.operation == "open"


def test_a_value_over_max_total_is_refused_not_evicted_at_once() -> None:
    """A value larger than ``max_total`` evicted itself in its own put: the put returned, the
    shelf quoted its handle, and recall said the handle was unknown."""
    store = MemoryStore(max_bytes=4096, max_total=1000)
    store.put("kept", b"k" * 500)
    with pytest.raises(StoreError, match="1,001 bytes is over the store's limit of 1,000") as e:
        store.put("big", b"x" * 1001)
    assert e.value.refused
    assert store.get("kept") == b"k" * 500  # nothing was evicted for it
    store.put("fits", b"f" * 1000)
    assert store.get("fits") == b"f" * 1000


def test_recall_on_a_store_too_small_for_an_original_quotes_no_handle() -> None:
    import json

    import ctxwin
    from ctxwin.steps._shelf import HANDLE_RE
    from ctxwin.testing import agent_body

    big = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 300))  # about 20 kB
    rules = {"context_window": 8000, "recall": True, "window": {"keep_rounds": 1}}
    policy = ctxwin.load_policy(rules, store=MemoryStore(max_total=10_000))
    reads = [[("read_file", {"path": f"f{n}"}, f"{big}\nfile {n}")] for n in range(4)]
    out = policy.apply(agent_body(reads))
    unresolved = [
        h for h in set(HANDLE_RE.findall(json.dumps(out.request))) if policy.recall(h).is_error
    ]
    assert unresolved == []
    assert any("over its size limit" in note for note in out.report.notes)
