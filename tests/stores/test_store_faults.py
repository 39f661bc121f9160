"""What a store loses or races on: originals lost after they were put (a flush, a restart,
a TTL, an eviction, a deleted file) while the agent's history goes on quoting their
handles; two summaries of one content written at once; a store that cannot be read back."""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._shelf as shelf_module
import ctxwin.stores.memory as memory_module
import ctxwin.stores.sqlite as sqlite_module
from ctxwin import StoreError
from ctxwin.steps._names import summarizer_name
from ctxwin.steps._shelf import CLEARED_REFUSED, HANDLE_RE, KEPT_REFUSED, KEPT_STORE_DOWN, Shelf
from ctxwin.stores import MemoryStore, open_store
from ctxwin.stores.sqlite import SQLiteStore
from ctxwin.testing import agent_body
from tests.stores.conftest import RedisServer

BIG = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 400))
CAPPED = {
    "context_window": 20_000,
    "recall": True,
    "window": {"keep_rounds": 2},
    "tools": {"read_file": {"max_tokens": 2000}},
}
"""Results capped as they come (the handle in the cap's notice), cleared by the window later
(the placeholder quoting the same handle)."""
CLEARED = {
    "context_window": 20_000,
    "recall": True,
    "window": {"keep_rounds": 1, "strategy": "threshold"},
}
"""Results left whole, then cleared by the window (the handle in the placeholder only)."""


def handles(body: object) -> set[str]:
    return set(HANDLE_RE.findall(json.dumps(body)))


class Agent:
    """An agent that appends each round to its own history (the same message objects from
    one request to the next, as the README's loop does)."""

    def __init__(self, policy: ctxwin.Policy) -> None:
        self.policy = policy
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the task."}]
        self.rounds = 0

    def step(self, n: int = 1) -> ctxwin.Result:
        for _ in range(n):
            i, self.rounds = self.rounds, self.rounds + 1
            function = {"name": "read_file", "arguments": json.dumps({"path": f"f{i}"})}
            call = {"id": f"c{i}", "type": "function", "function": function}
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            self.messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": original(i)})
        out = self.policy.apply({"model": "gpt-4o", "messages": list(self.messages)})
        assert ctxwin.check(out.request) == []
        return out


def original(i: int) -> str:
    return f"{BIG}\nfile {i}"


class Lossy:
    """A store that is not this process's memory (as a shelf sees it), which can lose all it
    holds at once behind the shelf's back (a FLUSHDB, a restart without persistence)."""

    url = "lossy://"

    def __init__(self, ttl: float | None = None) -> None:
        self.inner = MemoryStore()
        self.ttl = ttl
        self.puts: list[str] = []
        self.gets = 0

    def get(self, key: str) -> bytes | None:
        self.gets += 1
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.puts.append(key)
        self.inner.put(key, value, ttl=ttl)

    def close(self) -> None:
        pass

    def lose(self) -> None:
        self.inner.close()

    def holds(self, handle: str) -> bool:
        return self.inner.get("recall:" + handle) is not None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The shelf's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(shelf_module, "_clock", lambda: now[0])
    return now


# ------------------------------------------------------------- originals the store lost


@pytest.mark.parametrize("rules", [CAPPED, CLEARED], ids=["capped", "cleared"])
def test_a_lost_original_is_put_again_once_its_conversation_is_due_a_look(
    clock: list[float], rules: dict[str, Any]
) -> None:
    """The edit is memoized and the window resumes: the shelf was asked to keep an original
    once, so one the store lost stayed lost while every later request quoted its handle."""
    store = Lossy()
    agent = Agent(ctxwin.load_policy(rules, store=store))
    kept = handles(agent.step(6).request)
    assert kept
    store.lose()
    clock[0] += 60
    quoted = kept & handles(agent.step().request)
    assert quoted
    assert not any(store.holds(h) for h in quoted)
    clock[0] += shelf_module.KEPT_REFRESH
    quoted = kept & handles(agent.step().request)
    assert quoted
    assert all(store.holds(h) for h in quoted)


@pytest.mark.parametrize("rules", [CAPPED, CLEARED], ids=["capped", "cleared"])
def test_a_recall_of_a_lost_original_answers_it_and_the_next_request_puts_back_the_rest(
    rules: dict[str, Any],
) -> None:
    store = Lossy()
    agent = Agent(ctxwin.load_policy(rules, store=store))
    kept = sorted(handles(agent.step(6).request))
    store.lose()
    by_handle = {shelf_module.handle_of(original(i)): original(i) for i in range(6)}
    answer = agent.policy.recall(kept[0])
    assert (answer.text, answer.is_error) == (by_handle[kept[0]], False)
    assert store.holds(kept[0])  # put back at once
    quoted = set(kept) & handles(agent.step().request)
    assert quoted
    assert all(store.holds(h) for h in quoted)


def test_without_the_original_in_memory_the_next_request_puts_it_back_from_the_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shelf_module, "KEPT_TEXT", 0)  # the shelf keeps no original
    store = Lossy()
    agent = Agent(ctxwin.load_policy(CAPPED, store=store))
    kept = sorted(handles(agent.step(6).request))
    store.lose()
    answer = agent.policy.recall(kept[0])
    assert answer.is_error
    assert answer.text == (
        f"recall: the store no longer holds {kept[0]} (expired or evicted); it is kept again "
        "with the next request that still holds the result: try again then"
    )
    quoted = set(kept) & handles(agent.step().request)
    assert kept[0] in quoted
    assert all(store.holds(h) for h in quoted)
    assert not agent.policy.recall(kept[0]).is_error


def test_an_original_still_quoted_is_put_again_once_half_its_ttl_has_passed(
    clock: list[float],
) -> None:
    store = Lossy(ttl=60.0)
    agent = Agent(ctxwin.load_policy(CAPPED, store=store))
    kept = handles(agent.step(6).request)
    puts = len(store.puts)
    clock[0] += 10
    agent.step()
    again = [k for k in store.puts[puts:] if k.removeprefix("recall:") in kept]
    assert again == []  # 10 s of a 60 s TTL: not yet
    puts = len(store.puts)
    clock[0] += 21
    quoted = kept & handles(agent.step().request)
    again = [k for k in store.puts[puts:] if k.removeprefix("recall:") in kept]
    assert sorted(again) == sorted(f"recall:{h}" for h in quoted)


def test_a_request_between_two_looks_asks_the_store_for_its_new_results_only(
    clock: list[float],
) -> None:
    store = Lossy()
    agent = Agent(ctxwin.load_policy(CAPPED, store=store))
    agent.step(6)
    puts, gets = len(store.puts), store.gets
    clock[0] += 1
    agent.step()
    assert store.gets == gets
    assert len(store.puts) - puts <= 1  # the new result's original, if capped


def test_sqlite_originals_past_their_ttl_are_back_with_the_next_request(
    tmp_path: Path, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    wall = [1_700_000_000.0]
    monkeypatch.setattr(sqlite_module, "_now", lambda: wall[0])
    url = f"sqlite:///{tmp_path / 'store.db'}"
    agent = Agent(ctxwin.load_policy({**CAPPED, "store": {"url": url, "ttl": 60}}))
    kept = handles(agent.step(6).request)
    other = ctxwin.load_policy({**CAPPED, "store": url})  # another worker: no memory of them
    clock[0] += 31
    wall[0] += 31
    agent.step()  # past half the TTL: put again, for 60 s more
    clock[0] += 40
    wall[0] += 40  # 71 s after the first put
    assert [h for h in kept if other.recall(h).is_error] == []
    clock[0] += 61
    wall[0] += 61  # every one expired
    assert all(other.recall(h).is_error for h in kept)
    quoted = kept & handles(agent.step().request)
    assert quoted
    assert [h for h in quoted if other.recall(h).is_error] == []


def test_originals_the_memory_store_evicted_are_answered_and_put_back() -> None:
    store = MemoryStore(max_total=60_000)  # room for two originals of six
    agent = Agent(ctxwin.load_policy(CAPPED, store=store))
    kept = handles(agent.step(6).request)
    assert [h for h in kept if agent.policy.recall(h).is_error] == []
    quoted = kept & handles(agent.step().request)
    assert [h for h in quoted if agent.policy.recall(h).is_error] == []


@pytest.mark.redis
def test_a_flushed_redis_gets_back_what_the_conversation_quotes(own_redis: RedisServer) -> None:
    redis = pytest.importorskip("redis")
    agent = Agent(ctxwin.load_policy({**CAPPED, "store": own_redis.url}))
    kept = sorted(handles(agent.step(6).request))
    redis.Redis(port=own_redis.port).flushall()
    other = ctxwin.load_policy({**CAPPED, "store": own_redis.url})  # another worker
    assert all(other.recall(h).is_error for h in kept)
    assert not agent.policy.recall(kept[0]).is_error  # from the shelf's memory, put back
    quoted = set(kept) & handles(agent.step().request)
    assert quoted
    assert [h for h in quoted if other.recall(h).is_error] == []


def test_a_deleted_sqlite_file_is_opened_again(tmp_path: Path) -> None:
    """A file deleted while open (a cache cleaner): the store wrote on into the unlinked
    file, which no other process reads, without a word."""
    path = tmp_path / "store.db"
    store = SQLiteStore(f"sqlite:///{path}")
    store.put("a", b"1")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store.put("b", b"2")
    other = SQLiteStore(f"sqlite:///{path}")
    assert other.get("b") == b"2"
    assert other.get("a") is None
    store.close()
    other.close()


def test_two_stores_opening_a_new_sqlite_file_at_once_both_open(tmp_path: Path) -> None:
    """Setting WAL mode needs a lock SQLite does not wait for: one of two connections
    opening a new file at once failed ("database is locked") about one time in eight, and
    its policy fell back for the cool-off."""
    failed: list[BaseException] = []

    def open_one(url: str, start: threading.Barrier) -> None:
        start.wait()
        try:
            SQLiteStore(url).close()
        except StoreError as e:
            failed.append(e)

    for i in range(100):
        start = threading.Barrier(2, timeout=30)
        url = f"sqlite:///{tmp_path / f'{i}.db'}"
        threads = [threading.Thread(target=open_one, args=(url, start)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert failed == []


def test_originals_in_a_deleted_sqlite_file_are_put_back_by_the_next_request(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    agent = Agent(ctxwin.load_policy({**CAPPED, "store": f"sqlite:///{path}"}))
    kept = handles(agent.step(3).request)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    out = agent.step(2)
    assert out.report.notes == ()
    other = ctxwin.load_policy({**CAPPED, "store": f"sqlite:///{path}"})  # another process
    quoted = handles(out.request)
    assert kept & quoted
    assert [h for h in quoted if other.recall(h).is_error] == []


def test_two_policies_on_memory_share_no_original_unless_given_one_store() -> None:
    """``memory`` is the policy's own (a tenant each: docs/stores.md); one MemoryStore
    object given to both is shared."""
    body = agent_body([[("read_file", {}, BIG)], [("read_file", {}, "x")]])
    rules = {"recall": True, "tools": {"read_file": {"max_tokens": 100}}}
    first = ctxwin.load_policy(rules)
    handle = sorted(handles(first.apply(body).request))[0]
    assert ctxwin.load_policy(rules).recall(handle).is_error
    store = MemoryStore()
    a, b = ctxwin.load_policy(rules, store=store), ctxwin.load_policy(rules, store=store)
    a.apply(body)
    assert b.recall(handle).text == BIG


# ------------------------------------------------------------- refusals, decoding


def test_the_shelf_says_an_original_over_max_bytes_was_refused_not_that_the_store_is_down() -> None:
    shelf = Shelf(MemoryStore(max_bytes=100))
    with shelf.request():
        assert shelf.keep("x" * 1000) is None
        assert shelf.keep("short") is not None
    assert shelf.not_kept(shelf_module.handle_of("x" * 1000)) == KEPT_REFUSED
    assert shelf.not_kept(shelf_module.handle_of("other")) == KEPT_STORE_DOWN


def test_an_edit_whose_original_was_over_max_bytes_says_refused_not_store_down() -> None:
    policy = ctxwin.load_policy(
        {
            "recall": True,
            "store": {"url": "memory", "max_bytes": 1000},
            "tools": {"read_file": {"max_tokens": 50}},
        }
    )
    out = policy.apply(agent_body([[("read_file", {}, "word " * 400)], [("read_file", {}, "x")]]))
    assert [e.fallback for e in out.report.edits] == [KEPT_REFUSED]
    assert not handles(out.request)


def test_a_clearing_whose_original_was_over_max_bytes_says_refused_not_store_down() -> None:
    """The window's clearing of a result the store refused (no cap: the window keeps it)."""
    policy = ctxwin.load_policy(
        {
            "context_window": 3000,
            "recall": True,
            "store": {"url": "memory", "max_bytes": 1000},
            "window": {"keep_rounds": 1, "strategy": "threshold"},
        }
    )
    out = policy.apply(agent_body([[("read_file", {}, "word " * 2000)], [("read_file", {}, "x")]]))
    assert [e.fallback for e in out.report.edits if e.step == "window"] == [CLEARED_REFUSED]
    assert not handles(out.request)


def test_a_clearing_of_a_capped_result_whose_original_was_refused_says_refused() -> None:
    """The cap's edit said store_refused, but the window's later clearing of the capped text
    said store_down: the report told of an outage although the store had only refused one
    value."""
    policy = ctxwin.load_policy(
        {
            "context_window": 3000,
            "recall": True,
            "store": {"url": "memory", "max_bytes": 1000},
            "window": {"keep_rounds": 1, "strategy": "threshold", "trigger": 0.3, "target": 0.1},
            "tools": {"read_file": {"max_tokens": 600}},
        }
    )
    reads = [[("read_file", {"path": f"f{n}"}, f"file {n}: " + "word " * 2000)] for n in range(3)]
    out = policy.apply(agent_body(reads))
    fallbacks = [(e.step, e.call_id, e.fallback) for e in out.report.edits]
    assert ("window", "call_1", CLEARED_REFUSED) in fallbacks
    assert [f for _, _, f in fallbacks] == [KEPT_REFUSED] * 3 + [CLEARED_REFUSED] * 2
    assert not handles(out.request)


@pytest.mark.parametrize("value", ["true", "1", "false"])
def test_a_redis_url_that_decodes_responses_is_refused_when_the_store_opens(value: str) -> None:
    """Every put succeeded and every recall failed (the client gave back str). redis-py
    decodes for any value the URL gives, "false" too."""
    pytest.importorskip("redis")
    with pytest.raises(StoreError) as caught:
        open_store(f"redis://127.0.0.1:1/0?decode_responses={value}")
    assert caught.value.operation == "open"
    assert "decode_responses is set in the URL" in str(caught.value)
    open_store("redis://127.0.0.1:1/0?decode_responses=").close()  # connects to nothing


# ------------------------------------------------------------- summaries


def test_a_partial_is_named_by_the_function_it_wraps() -> None:
    def cheap(text: str, *, model: str, **_: Any) -> str:
        return model

    def careful(text: str, *, style: str, **_: Any) -> str:
        return style

    a, b = functools.partial(cheap, model="mini"), functools.partial(careful, style="verbatim")
    assert summarizer_name(a) == summarizer_name(cheap) != summarizer_name(b)
    assert summarizer_name(functools.partial(a)) == summarizer_name(cheap)


SHARED = {
    "context_window": 100_000,
    "tools": {"read_file": {"summarize": {"over_tokens": 200, "max_tokens": 100}}},
}
READ = agent_body(
    [
        [("read_file", {"path": "a.py"}, "\n".join(f"x{i} = {i}" for i in range(400)))],
        [("read_file", {"path": "b.py"}, "tiny")],
    ]
)


def summary_from(summarizer: Any, store: MemoryStore) -> str:
    out = ctxwin.load_policy(SHARED, store=store, summarizer=summarizer).apply(READ)
    text: str = out.request["messages"][3]["content"]
    return text.split("\n", 1)[1]


class Summarizer:
    """A summarizer class: ``answers`` says what it answers, ``attributes`` are set on it."""

    def __init__(self, answers: str, **attributes: str) -> None:
        self.answers = answers
        self.__dict__.update(attributes)

    def __call__(self, text: str, **_: Any) -> str:
        return f"summary by {self.answers}"


def test_two_lambdas_of_one_module_do_not_share_summaries() -> None:
    """Both were named ``<module>.<lambda>``: through one store the second policy sent the
    first one's summary. A lambda or a nested function is named with its line."""
    store = MemoryStore()
    cheap = lambda text, **_: "CHEAP summary"  # noqa: E731
    careful = lambda text, **_: "CAREFUL summary"  # noqa: E731
    assert summary_from(cheap, store) == "CHEAP summary"
    assert summary_from(careful, store) == "CAREFUL summary"
    assert summary_from(cheap, store) == "CHEAP summary"
    assert (
        summarizer_name(cheap) == f"{__name__}.{cheap.__qualname__}:{cheap.__code__.co_firstlineno}"
    )


@pytest.mark.parametrize("attribute", ["name", "model"])
def test_callable_instances_are_named_by_their_name_or_model(attribute: str) -> None:
    """Instances of one class were all named by the class: two models sent each other's
    summaries. A ``name`` (else a ``model``) attribute names an instance; instances with
    neither share."""
    store = MemoryStore()
    mini, big = (Summarizer(m, **{attribute: m}) for m in ("mini", "big"))
    assert summary_from(mini, store) == "summary by mini"
    assert summary_from(big, store) == "summary by big"
    assert summarizer_name(mini) == f"{__name__}.Summarizer:mini"
    named = Summarizer("x", name="cheap", model="gpt-4.1-mini")
    assert summarizer_name(named) == f"{__name__}.Summarizer:cheap"
    assert summarizer_name(Summarizer("mini")) == summarizer_name(Summarizer("big"))


@pytest.mark.parametrize(
    "store",
    ["memory", "sqlite"],
)
def test_put_new_keeps_the_first_value(store: str, tmp_path: Path) -> None:
    url = "memory" if store == "memory" else f"sqlite:///{tmp_path / 's.db'}"
    s: Any = open_store(url)
    assert s.put_new("k", b"first") == b"first"
    assert s.put_new("k", b"second") == b"first"
    assert s.get("k") == b"first"
    s.put("old", b"gone", ttl=1e-9)  # expired: the next one takes its place
    assert s.put_new("old", b"new") == b"new"
    s.close()


@pytest.mark.redis
def test_redis_put_new_keeps_the_first_value(redis_url: str) -> None:
    from ctxwin.stores.redis import RedisStore

    s = RedisStore(redis_url, prefix=f"ctxwin:test-{os.getpid()}-{id(object())}:")
    assert s.put_new("k", b"first") == b"first"
    assert s.put_new("k", b"second") == b"first"
    assert s.get("k") == b"first"
    s.close()


SUMMARIZED = {
    "tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 100, "timeout": 30}}}
}
WORDS = " ".join(f"w{i}" for i in range(3000))


def racing_summarizer() -> tuple[Any, threading.Event]:
    """Two calls that are both made before either answers; the second answers only once
    a request that got the first answer has been sent (set the event then)."""
    both = threading.Barrier(2, timeout=20)
    sent = threading.Event()
    counter = itertools.count()

    def summarize(text: str, **_: Any) -> str:
        both.wait()
        k = next(counter)
        if k:
            assert sent.wait(20)
        return f"summary {k}"

    return summarize, sent


def summary_sent(out: ctxwin.Result) -> str:
    request: Any = out.request
    return str(request["messages"][3]["content"])


def race(policies: list[ctxwin.Policy], sent: threading.Event) -> list[str]:
    outs: dict[int, str] = {}

    def run(i: int) -> None:
        body = agent_body([[("read_file", {}, WORDS)], [("read_file", {}, "x")]])
        outs[i] = summary_sent(policies[i].apply(body))
        sent.set()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return [outs[0], outs[1]]


def test_two_requests_of_one_policy_summarizing_at_once_keep_the_first_summary() -> None:
    """The memo kept the last answer: the next request of the conversation (read again from
    JSON: new objects) sent another summary for a result already sent."""
    summarize, sent = racing_summarizer()
    policy = ctxwin.load_policy(SUMMARIZED, summarizer=summarize)
    first = race([policy, policy], sent)
    assert first[0] == first[1]
    assert "summary 0" in first[0]
    again = agent_body([[("read_file", {}, WORDS)], [("read_file", {}, "x")]])
    assert summary_sent(policy.apply(again)) == first[0]


def test_two_workers_summarizing_at_once_into_one_store_send_the_first_summary(
    tmp_path: Path,
) -> None:
    """Each worker kept its own summary and the store the last writer's: a conversation
    moving between workers had that result change under the prompt cache."""
    summarize, sent = racing_summarizer()
    rules = {**SUMMARIZED, "store": f"sqlite:///{tmp_path / 'store.db'}"}
    workers = [ctxwin.load_policy(rules, summarizer=summarize) for _ in range(2)]
    first = race(workers, sent)
    assert first[0] == first[1]
    third = ctxwin.load_policy(rules, summarizer=summarize)
    body = agent_body([[("read_file", {}, WORDS)], [("read_file", {}, "x")]])
    assert summary_sent(third.apply(body)) == first[0]


@pytest.mark.parametrize("answer", ["raise", "summary"])
def test_a_clear_memo_while_a_summary_is_awaited_loses_nothing(answer: str) -> None:
    """The last pass read the new, empty memo, found the summary pending again and sent the
    result whole: not summarized, not capped, no edit."""
    rules = {
        "tools": {
            "read_file": {
                "max_tokens": 300,
                "summarize": {"over_tokens": 500, "max_tokens": 100, "timeout": 30},
            }
        }
    }
    policy: ctxwin.Policy

    def summarize(text: str, **_: Any) -> str:
        policy.clear_memo()  # a periodic trim, from another thread, meanwhile
        if answer == "raise":
            raise RuntimeError("429 rate limited")
        return "a short summary"

    policy = ctxwin.load_policy(rules, summarizer=summarize)
    out = policy.apply(agent_body([[("read_file", {}, WORDS)], [("read_file", {}, "x")]]))
    edits = [(e.step, e.fallback) for e in out.report.edits]
    if answer == "raise":
        assert edits == [("summarize", "summarizer_error: RuntimeError: 429 rate limited")]
        assert out.report.edits[0].tokens_after <= 300
    else:
        assert edits == [("summarize", None)]
        assert "a short summary" in summary_sent(out)


def test_the_memory_store_lets_one_of_two_racing_writers_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """put_new looked for a value under the lock and put its own after letting go of it: a
    writer that came in between was told its value won, and then lost it to the first."""
    store = MemoryStore()
    b_done = threading.Event()
    size = memory_module.check_size
    first = threading.local()

    def slow(*args: Any) -> None:
        if threading.current_thread().name == "A" and not getattr(first, "seen", False):
            first.seen = True
            b_done.wait(5)  # B runs its whole put_new here
        size(*args)

    monkeypatch.setattr(memory_module, "check_size", slow)
    got: dict[str, bytes] = {}

    def write(name: str) -> None:
        got[name] = store.put_new("summary:k", name.encode())
        if name == "B":
            b_done.set()

    a = threading.Thread(target=write, args=("A",), name="A")
    a.start()
    b = threading.Thread(target=write, args=("B",), name="B")
    b.start()
    a.join(10)
    b.join(10)
    kept = store.get("summary:k")
    assert got["A"] == got["B"] == kept, got


class Down:
    """A store whose server is down: every call fails."""

    url = "down://"

    def get(self, key: str) -> bytes | None:
        raise StoreError("down://: connection refused", url=self.url, operation="get")

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        raise StoreError("down://: connection refused", url=self.url, operation="put")

    def close(self) -> None:
        pass


def test_a_store_that_goes_down_is_warned_of_once_an_outage(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's note says so; nothing else did under default logging (each edit's
    ``store_down`` fallback is logged at INFO, with every request of a server)."""
    now = [1000.0]
    monkeypatch.setattr(shelf_module, "time", type("T", (), {"monotonic": lambda: now[0]}))
    agent = Agent(ctxwin.load_policy(CAPPED, store=Down()))
    caplog.set_level(logging.INFO, logger="ctxwin")
    for _ in range(30):  # 3 s a request: the outage goes on through its cool-offs
        now[0] += 3.0
        agent.step()
    now[0] += shelf_module.DOWN_AGAIN + shelf_module.COOL_OFF + 1  # back, down again: said
    agent.step()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 2
    assert warned[0].startswith("ctxwin: store down:// failed (keeping an original)")


class Guarded:
    """A store object of the user's whose ``url`` holds a password, as does its driver's
    message when it fails."""

    url = "redis://:hunter2@db.internal:6379/0"

    def get(self, key: str) -> bytes | None:
        raise ConnectionError(f"Error connecting to {self.url}: connection reset")

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        raise ConnectionError(f"Error connecting to {self.url}: connection reset")

    def close(self) -> None:
        pass


def test_a_store_objects_password_is_masked_and_the_model_is_told_no_store_detail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The url of a store object was shown as it is (a URL given as text is masked): its
    password reached the report's notes, the log and, in the recall's error answer, the
    model. The answer says the store is unavailable; the notes and the log say which and
    why, masked."""
    policy = ctxwin.load_policy(CAPPED, store=Guarded())
    caplog.set_level(logging.WARNING, logger="ctxwin")
    notes = Agent(policy).step().report.notes
    answer = policy.recall_result("c9", {"handle": "r-0123456789abcdef"}, "openai-chat")
    logged = [r.getMessage() for r in caplog.records]
    masked = "redis://:***@db.internal:6379/0"
    assert policy.shelf.url == masked
    assert notes == (
        f"store {masked} failed (keeping an original): {masked}: put failed: ConnectionError: "
        f"Error connecting to {masked}: connection reset; fell back",
    )
    assert logged == [f"ctxwin: {notes[0]}"]
    assert answer["content"] == "recall: the store is unavailable; try again later"
