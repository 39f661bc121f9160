"""A client that keeps ctxwin's output as its history: its requests hold ctxwin's
placeholders as they came (pristine), and the originals they quote are put again before
the store's TTL drops them, on every store.

The look at a conversation's quoted originals passed over pristine messages, so such a
client's handles were never put again: after the TTL another worker (or ``ctxwin recall``)
answered "unknown handle" while the requests still quoted it. Time is a fake clock shared
by the shelf and the stores (for Redis, the keys' TTLs are shortened on the server).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._shelf as shelf_module
from ctxwin.stores.memory import MemoryStore
from tests.stores.fake_time import Clock, install, two_workers

TTL = 60.0  # originals quoted are put again every 30 s of the fake clock (Shelf.life)
RULES: dict[str, Any] = {
    "context_window": 1_000_000,
    "tokenizer": "o200k_base",
    "recall": True,
    "tools": {"read_file": {"max_tokens": 60}},
}
HANDLE = re.compile(r"r-[0-9a-f]{16}")
BIG = "\n".join(f"line {i}" for i in range(300))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return install(monkeypatch, 1000.0)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def shared(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[Any]:
    """Two policies (two workers) on one store with a TTL."""
    yield from two_workers(request, clock, tmp_path, RULES, TTL)


class Kept:
    """An OpenAI chat history that the client builds from what ctxwin sent."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
        ]

    def round(self, i: int, text: str) -> None:
        function = {"name": "read_file", "arguments": "{}"}
        call = {"id": f"c{i}", "type": "function", "function": function}
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self.messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})

    def apply(self, policy: ctxwin.Policy) -> ctxwin.Result:
        out = policy.apply({"messages": self.messages})
        assert out.request is not None
        self.messages = list(out.request["messages"])  # the next request starts from it
        return out


def test_a_handle_kept_in_the_clients_history_outlives_the_ttl(
    shared: list[ctxwin.Policy], clock: Clock
) -> None:
    """Another worker recalls it at every request, long past the TTL of the first put."""
    worker_a, worker_b = shared
    history = Kept()
    history.round(0, BIG)
    (handle,) = HANDLE.findall(str(history.apply(worker_a).request))
    for i in range(1, 13):  # a request every 15 s: 180 s, three TTLs
        clock.at(1000.0 + 15 * i)
        history.round(i, f"small {i}")
        out = history.apply(worker_a)
        assert handle in str(out.request)
        answer = worker_b.recall(handle)
        assert answer.text == BIG, (clock.now, answer.text)
        assert not out.report.notes


def test_an_original_the_policy_no_longer_holds_is_noted_once(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Due to be put again, a handle quoted only by a placeholder of the history, its
    original no longer in the policy's memory nor in the store (evicted, say): the report
    says it was not put again."""
    monkeypatch.setattr(shelf_module, "KEPT_TEXT", 0)  # the shelf keeps no original
    store = MemoryStore(ttl=TTL)
    policy = ctxwin.load_policy(RULES, store=store)
    history = Kept()
    history.round(0, BIG)
    (handle,) = HANDLE.findall(str(history.apply(policy).request))
    store.put(f"recall:{handle}", b"", ttl=0)  # gone from the store too
    notes = []
    for i in range(1, 6):
        clock.at(1000.0 + 15 * i)
        history.round(i, f"small {i}")
        notes.append(history.apply(policy).report.notes)
    said = [n for request in notes for n in request if handle in n]
    assert said == [
        f"store memory: the originals of {handle}, which the request quotes, were not put "
        "again: no longer in this policy's memory, nor in the request or the store"
    ]
    assert notes[1] == tuple(said)  # 1030 s: the look due 30 s after the first, at 1000 s


def test_a_restarted_worker_puts_again_from_the_store_what_it_no_longer_holds(
    clock: Clock, tmp_path: Path
) -> None:
    """A new policy on the same store, the client keeping ctxwin's output: nobody held the
    original, it was not put again, and it expired while still quoted."""
    config = {**RULES, "store": {"url": f"sqlite:///{tmp_path / 'store.db'}", "ttl": TTL}}
    history = Kept()
    history.round(0, BIG)
    (handle,) = HANDLE.findall(str(history.apply(ctxwin.load_policy(config)).request))
    restarted = ctxwin.load_policy(config)
    for i in range(1, 9):  # 120 s: two TTLs
        clock.at(1000.0 + 15 * i)
        history.round(i, f"small {i}")
        assert not history.apply(restarted).report.notes
    assert ctxwin.load_policy(config).recall(handle).text == BIG


def test_another_workers_handles_on_a_store_without_a_ttl_are_not_noted(
    clock: Clock, tmp_path: Path
) -> None:
    """Behind a load balancer, a worker serves a conversation whose originals another put:
    it cannot put them again, and needs not (nothing drops them): no note."""
    config = {**RULES, "store": {"url": f"sqlite:///{tmp_path / 'store.db'}"}}
    worker_a, worker_b = ctxwin.load_policy(config), ctxwin.load_policy(config)
    history = Kept()
    history.round(0, BIG)
    (handle,) = HANDLE.findall(str(history.apply(worker_a).request))
    for i in range(1, 4):
        clock.at(1000.0 + 700 * i)  # past KEPT_REFRESH each time: the look is due
        history.round(i, f"small {i}")
        out = history.apply(worker_b)
        assert handle in str(out.request)
        assert not out.report.notes
    assert worker_b.recall(handle).text == BIG


def test_workers_under_a_ttl_do_not_note_each_others_handles(clock: Clock, tmp_path: Path) -> None:
    """Requests alternating between two workers (a load balancer), the client keeping
    ctxwin's output: B noted every handle A had put seconds before and still held."""
    config = {**RULES, "store": {"url": f"sqlite:///{tmp_path / 'store.db'}", "ttl": 3600}}
    workers = [ctxwin.load_policy(config), ctxwin.load_policy(config)]
    history = Kept()
    notes = []
    for i in range(8):
        clock.at(1000.0 + 10 * i)
        history.round(i, BIG if i % 2 == 0 else f"small {i}")  # the big ones: A's
        notes += history.apply(workers[i % 2]).report.notes
    assert notes == []


def test_conversations_that_only_start_alike_keep_their_own_looks(clock: Clock) -> None:
    """Two conversations reusing one system prompt dict: found again by the one message
    they share, B took A's frequent looks for its own, was never due, and the original it
    quoted expired in the store."""
    store = MemoryStore(ttl=TTL)
    policy = ctxwin.load_policy(RULES, store=store)
    system = {"role": "system", "content": "You are an agent."}  # one dict, reused
    a, b = Kept(), Kept()  # b sends its raw history: the handle is ctxwin's, each time
    a.messages[0] = b.messages[0] = system
    b.round(0, BIG)
    (handle,) = HANDLE.findall(str(policy.apply({"messages": b.messages}).request))
    for t in range(5, 200, 5):  # A: a request every 5 s; B: one every 25 s
        clock.at(1000.0 + t)
        a.round(t, f"small {t}")
        a.apply(policy)
        if t % 25 == 0:
            b.round(t, f"small {t}")
            assert handle in str(policy.apply({"messages": b.messages}).request)
            assert store.get(f"recall:{handle}") is not None, t


def test_a_request_reads_the_text_of_the_messages_it_adds_only(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handles a message quotes are read once per message (the hot path): a request
    of a known conversation reads what it adds (and what ctxwin changed in the last)."""
    policy = ctxwin.load_policy(RULES, store=MemoryStore(ttl=TTL))
    history = Kept()
    history.round(0, BIG)
    history.apply(policy)
    memo = policy.shelf._tending._held._memo
    read: list[object] = []
    put = memo.put

    def reading(msg: object, value: object, salt: int = 0) -> None:
        read.append(msg)
        put(msg, value, salt)

    monkeypatch.setattr(memo, "put", reading)
    for i in range(1, 40):
        clock.at(1000.0 + i)
        history.round(i, BIG if i % 5 == 0 else f"small {i}")  # every fifth one capped
        history.apply(policy)
    assert len(read) == len({id(m) for m in read})  # no message read twice
    assert len(read) <= 2 * 39 + 8  # the two a round adds, and the results ctxwin capped


def _counted_looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each request the shelf looks at whole (``_tend._put_again``), as the
    looks come."""
    import ctxwin.steps._tend as tend_module

    looks: list[int] = []
    put_again = tend_module._put_again

    def counted(shelf: Any, before: Any, after: Any, held: Any) -> bool:
        looks.append(len(before.messages))
        return bool(put_again(shelf, before, after, held))

    monkeypatch.setattr(tend_module, "_put_again", counted)
    return looks


def test_a_known_conversation_is_not_looked_at_whole_at_every_request(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client sends back ctxwin's output, whose newest results ctxwin capped: the
    conversation was found again only by an identity prefix of the whole last request, so
    every request was due a look at all it quotes (0.9 ms a request at 1,000 messages)."""
    policy = ctxwin.load_policy(RULES, store=MemoryStore(ttl=TTL))
    looks = _counted_looks(monkeypatch)
    history = Kept()
    for i in range(20):
        clock.at(1000.0 + i)  # 20 s in all: within half the TTL, no look is due by time
        history.round(i, BIG)  # each capped as it comes: the next request sends it back
        history.apply(policy)
    assert len(looks) <= 2, looks


def test_conversations_served_in_turn_are_not_looked_at_whole_at_every_request(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shelf remembered the last look of 8 conversations, where the engine's other
    memos keep 64: a policy serving 12 conversations in turn found none of them again and
    looked at each whole history at every request (review s50-5)."""
    policy = ctxwin.load_policy(RULES, store=MemoryStore(ttl=TTL))
    looks = _counted_looks(monkeypatch)
    histories = [Kept() for _ in range(12)]
    for k, history in enumerate(histories):
        history.messages[0] = {"role": "user", "content": f"task {k}"}
    for i in range(4):
        clock.at(1000.0 + i)  # within half the TTL: no look is due by time
        for history in histories:
            history.round(i, BIG)
            history.apply(policy)
    assert len(looks) <= 12 + 2, len(looks)  # the first look of each, not one a request


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_worker_that_has_put_nothing_keeps_alive_what_the_history_quotes(
    kind: str, clock: Clock, tmp_path: Path
) -> None:
    """The conversation moves to a fresh worker and goes on in plain chat turns: that
    worker has put no original itself, yet the handle its requests quote is put again
    (from the store) before the TTL drops it, as any worker's would be."""
    store = MemoryStore(ttl=TTL)
    url = {"url": f"sqlite:///{tmp_path / 'store.db'}", "ttl": TTL}

    def worker() -> ctxwin.Policy:
        if kind == "memory":
            return ctxwin.load_policy(RULES, store=store)
        return ctxwin.load_policy({**RULES, "store": url})

    history = Kept()
    history.round(0, BIG)
    (handle,) = HANDLE.findall(str(history.apply(worker()).request))
    fresh = worker()
    for i in range(1, 9):  # 120 s: two TTLs
        clock.at(1000.0 + 15 * i)
        history.messages += [
            {"role": "assistant", "content": f"answer {i}"},
            {"role": "user", "content": f"question {i}"},
        ]
        out = history.apply(fresh)
        assert handle in str(out.request)
        assert not out.report.notes
    assert worker().recall(handle).text == BIG


CLEARING: dict[str, Any] = {
    "context_window": 20_000,
    "tokenizer": "o200k_base",
    "recall": True,
    "window": {"keep_rounds": 1, "strategy": "threshold", "trigger": 0.2, "target": 0.1},
    "tools": {"read_file": {"max_tokens": 2000}},
}
"""Results capped as they come (the notice quoting the original's handle), cleared by the
window in a later request, which holds them as ctxwin capped them."""
LONG = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 400))


@pytest.fixture(params=["memory", "sqlite", "redis"])
def clearing(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[Any]:
    """Two workers of :data:`CLEARING` on one store with a TTL."""
    yield from two_workers(request, clock, tmp_path, CLEARING, TTL)


def test_a_capped_result_cleared_later_quotes_its_originals_handle(
    clearing: list[ctxwin.Policy], clock: Clock
) -> None:
    """The placeholder of a result the client sent back capped quoted the handle of the
    capped text (put as a second original); no request quoted the original's handle any
    more, so it expired, and the capped text recalled sent the agent to a handle that
    answered "unknown handle"."""
    worker_a, worker_b = clearing
    history = Kept()
    originals = [f"{LONG}\nfile {i}" for i in range(6)]
    capped = ""
    for i, text in enumerate(originals):
        clock.at(1000.0 + i)
        history.round(i, text)
        history.apply(worker_a)
        if i == 0:
            capped = history.messages[3]["content"]
    assert HANDLE.findall(capped) == [shelf_module.handle_of(originals[0])]
    cleared = history.messages[3]["content"]
    assert cleared != capped  # the window cleared it in a later request
    assert HANDLE.findall(cleared) == HANDLE.findall(capped)
    assert worker_b.recall(shelf_module.handle_of(capped)).is_error  # never put
    for t in range(1, 13):  # a request every 15 s: 180 s, three TTLs
        clock.at(1010.0 + 15 * t)
        history.messages += [
            {"role": "assistant", "content": f"answer {t}"},
            {"role": "user", "content": f"question {t}"},
        ]
        out = history.apply(worker_a)
        assert not out.report.notes
        (handle,) = HANDLE.findall(history.messages[3]["content"])
        assert worker_b.recall(handle).text == originals[0], clock.now


def test_a_raw_result_quoting_a_handle_outside_a_notice_of_its_call_keeps_its_own() -> None:
    """Only ctxwin's own notice for this call names the original: a raw result that quotes
    a handle in another tool's notice, or within a line, is cleared quoting its own handle,
    and is what that handle recalls."""
    policy = ctxwin.load_policy(CLEARING, store=MemoryStore())
    other = "r-0123456789abcdef"
    note = f'[recall("{other}") returns the whole grep result; lines or grep take part.]'
    lines = "\n".join(LONG.splitlines()[:120])  # under the cap: sent whole, then cleared
    raws = [
        f"{lines}\n[... 5 of 100 tokens of grep output truncated ...] {note}\nfile {i}"
        if i % 2 == 0
        else f'{lines}\nthe log says recall("{other}") returns it\nfile {i}'
        for i in range(6)
    ]
    history = Kept()
    for i, text in enumerate(raws):
        history.round(i, text)
    out = history.apply(policy)
    assert not [e for e in out.report.edits if e.step != "window"]
    cleared = [m["content"] for m in history.messages[3:-2:2] if "cleared" in m["content"]]
    assert len(cleared) >= 2
    for i, placeholder in enumerate(cleared):
        (handle,) = HANDLE.findall(placeholder)
        assert handle == shelf_module.handle_of(raws[i])
        assert policy.recall(handle).text == raws[i]


def _log(handle: str, notice: str = '[... 512 of 900 tokens cut: recall("{handle}")]') -> str:
    """An old agent's log (``cat old_session.log``) holding, on a line of its own, a notice
    of ctxwin's quoting ``handle``: raw output, not ctxwin's."""
    return "\n".join(
        [f"2024-05-01 step {i}: ran tests, {i} passed" for i in range(120)]
        + [notice.format(handle=handle)]
        + [f"2024-05-01 step {i}: more log" for i in range(120, 240)]
    )


def _cleared_log(policy: ctxwin.Policy, log: str) -> str:
    """The placeholder the window sends for ``log`` (bash's result, the first round's)."""
    history = Kept()
    history.round(0, log)
    history.messages[2]["tool_calls"][0]["function"]["name"] = "bash"
    for i in range(1, 6):
        history.round(i, f"{LONG}\nfile {i}")
    placeholder = history.apply(policy).request["messages"][3]["content"]
    assert "cleared" in placeholder  # the window cleared it
    return str(placeholder)


def test_a_raw_result_holding_a_notice_of_an_unknown_handle_keeps_its_own() -> None:
    """A log quoting, on a line of its own, the short recall notice of another session
    (its handle unknown to the store) was taken for ctxwin's output: the placeholder quoted
    that handle, the log was never kept, and no handle brought it back."""
    policy = ctxwin.load_policy(CLEARING, store=MemoryStore())
    log = _log("r-0123456789abcdef")
    (handle,) = HANDLE.findall(_cleared_log(policy, log))
    assert handle == shelf_module.handle_of(log)
    assert policy.recall(handle).text == log


def test_a_raw_result_holding_a_notice_whose_figures_are_not_its_own_keeps_its_own() -> None:
    """The notice's handle is one the store holds (the log of an earlier session on the
    same store), but the log holds far more than the 388 tokens the notice says were
    kept: it is no cut of ctxwin's, and is kept under its own handle."""
    store = MemoryStore()
    policy = ctxwin.load_policy(CLEARING, store=store)
    earlier = "an earlier session's output"
    store.put(f"recall:{shelf_module.handle_of(earlier)}", earlier.encode())
    log = _log(shelf_module.handle_of(earlier))
    (handle,) = HANDLE.findall(_cleared_log(policy, log))
    assert handle == shelf_module.handle_of(log)
    assert policy.recall(handle).text == log


class _GetFails(MemoryStore):
    """A store whose reads fail and whose writes work."""

    def get(self, key: str) -> bytes | None:
        raise ctxwin.StoreError("read timed out", url="memory", operation="get")


def _capped(policy: ctxwin.Policy, original: str) -> Kept:
    """A history holding ``original`` as ``policy`` capped it (read_file, round 0)."""
    history = Kept()
    history.round(0, original)
    history.apply(policy)
    assert HANDLE.findall(history.messages[3]["content"]) == [shelf_module.handle_of(original)]
    return history


def _clear_first(history: Kept, policy: ctxwin.Policy) -> str:
    """The placeholder ``policy`` sends for the first result once later rounds come."""
    for i in range(1, 6):
        history.round(i, f"{LONG}\nfile {i}")
    placeholder = history.apply(policy).request["messages"][3]["content"]
    assert "cleared" in placeholder
    return str(placeholder)


def test_a_notice_whose_handle_the_store_fails_to_confirm_is_not_quoted() -> None:
    """A worker that put nothing clears a result another worker capped, and the store
    fails the look at the notice's handle: nothing says the store holds it, so the
    placeholder does not quote it; the text is then to be kept under its own handle, and
    with the store down (in its cool-off) it is cleared as any result is then, without a
    handle, its edit and the report's notes saying so."""
    history = _capped(ctxwin.load_policy(CLEARING, store=MemoryStore()), f"{LONG}\nfile 0")
    policy = ctxwin.load_policy(CLEARING, store=_GetFails())
    for i in range(1, 6):
        history.round(i, f"{LONG}\nfile {i}")
    out = history.apply(policy)
    placeholder = out.request["messages"][3]["content"]
    assert "cleared" in placeholder
    assert HANDLE.findall(placeholder) == []
    (edit,) = [e for e in out.report.edits if e.step == "window" and e.call_id == "c0"]
    assert edit.fallback == "store_down: cleared without a recall handle"
    assert any("failed (checking a notice's handle r-" in n for n in out.report.notes)


def test_another_workers_capped_result_cleared_here_quotes_its_originals_handle(
    clearing: list[ctxwin.Policy], clock: Clock
) -> None:
    """Worker B, which put nothing, finds the original of the notice's handle in the store:
    its placeholder quotes that handle, and puts no second original."""
    worker_a, worker_b = clearing
    original = f"{LONG}\nfile 0"
    history = _capped(worker_a, original)
    capped = history.messages[3]["content"]
    (handle,) = HANDLE.findall(_clear_first(history, worker_b))
    assert handle == shelf_module.handle_of(original)
    assert worker_a.recall(handle).text == original
    assert worker_a.recall(shelf_module.handle_of(capped)).is_error  # never put
