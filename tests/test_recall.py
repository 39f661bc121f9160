"""Recall: what a step shortens stays in the store, and the agent can get it back exactly."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin._core.model import FORMATS, ToolResult
from ctxwin.formats import get_adapter
from ctxwin.replay import request_points
from ctxwin.steps._shelf import HANDLE_RE, handle_of
from ctxwin.stores import MemoryStore, open_store
from ctxwin.testing import AsyncFakeSummarizer, FakeSummarizer, agent_body
from tests.conftest import CHAINED_WITHOUT_ID, corpus_params, load

BIG = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 400))


def reads(n: int, text: str = BIG) -> list[list[tuple[str, dict[str, Any], str]]]:
    return [[("read_file", {"path": f"f{i}.py"}, f"{text}\nfile {i}")] for i in range(n)]


def policy(**extra: Any) -> ctxwin.Policy:
    config: dict[str, Any] = {
        "context_window": 20_000,
        "recall": True,
        "window": {"keep_rounds": 2},
        "tools": {"read_file": {"max_tokens": 2000}},
    }
    config.update(extra)
    return ctxwin.load_policy(config)


def handles(body: object) -> list[str]:
    return sorted(set(HANDLE_RE.findall(json.dumps(body))))


def results(conv: ctxwin.Conversation) -> list[ToolResult]:
    return [b for m in conv.messages for b in m.blocks if isinstance(b, ToolResult)]


def originals_by_output(result: ctxwin.Result, before: ctxwin.Conversation) -> dict[str, str]:
    """For each handle in the output: the input text of the result it stands for (found
    through the edit map: same message, same block)."""
    out: dict[str, str] = {}
    for change in result.edit_map.messages:
        if change.source is None:
            continue
        msg = result.conversation.messages[change.index]
        src = before.messages[change.source]
        for bi, block in enumerate(msg.blocks):
            if isinstance(block, ToolResult):
                for h in HANDLE_RE.findall(block.text):
                    original = src.blocks[bi]
                    assert isinstance(original, ToolResult)
                    out[h] = original.text
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_cleared_and_capped_results_quote_handles_that_give_back_the_original(fmt: str) -> None:
    body = agent_body(reads(8), format=fmt)
    p = policy()
    result = p.apply(body)
    steps = {e.step for e in result.report.edits}
    assert {"cap", "window"} <= steps
    before = ctxwin.parse(body, fmt)
    found = originals_by_output(result, before)
    assert len(found) == 8  # every read was capped, the old ones cleared too
    for h, original in found.items():
        answer = p.recall(h)
        assert not answer.is_error
        assert answer.text == original  # exactly, not the capped text
        assert handle_of(original) == h
    assert ctxwin.check(result.request, fmt) == []


def test_the_placeholder_and_notice_say_how_to_recall() -> None:
    p = policy()
    result = p.apply(agent_body(reads(8)))
    texts = [r.text for r in results(result.conversation)]
    cleared = [t for t in texts if t.startswith("[read_file result cleared")]
    assert cleared
    assert all(re.search(r'recall\("r-[0-9a-f]{16}"\) returns it', t) for t in cleared)
    capped = [t for t in texts if "truncated" in t]
    assert capped
    assert all("recall(" in t for t in capped)


def test_lines_and_grep_take_part_of_the_original() -> None:
    p = policy()
    body = agent_body(reads(8))
    h = handles(p.apply(body).request)[0]
    whole = p.recall(h).text
    assert p.recall(h, lines="10-12").text == "".join(whole.splitlines(keepends=True)[9:12])
    assert p.recall(h, lines=[3, 3]).text == whole.splitlines(keepends=True)[2]
    assert p.recall(h, lines=5).text.startswith("line 5:")
    grep = p.recall(h, grep=r"^line 39[0-2]:").text.splitlines()
    assert [g.split(":", 1)[0] for g in grep] == ["390", "391", "392"]
    assert p.recall(h, lines="390-399", grep="line 391").text.startswith("391:line 391")
    for bad in ("20-10", "abc", "0-3", "9999-10000", True):
        answer = p.recall(h, lines=bad)
        assert answer.is_error, bad
    assert p.recall(h, grep="(").is_error
    nothing = p.recall(h, grep="no such text")
    assert not nothing.is_error
    assert "no line" in nothing.text


def test_lines_are_numbered_at_newlines_only() -> None:
    """A form feed or U+2028 in a file does not start a line for grep -n or sed, nor here:
    the model quotes line numbers it read in the file."""
    p = policy()
    text = "one\ntwo\x0cstill two\u2028and two\r\nthree needle\nfour"
    body = agent_body([[("read_file", {"path": "a"}, text + "\n" + "x " * 3000)]])
    h = handles(p.apply(body).request)[0]
    assert p.recall(h, lines="2").text == "two\x0cstill two\u2028and two\r\n"
    assert p.recall(h, lines="3-4").text == "three needle\nfour\n"
    assert p.recall(h, grep="needle").text == "3:three needle"


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_handle_is_an_error_result_never_an_exception(fmt: str) -> None:
    p = policy()
    for args in ({"handle": "r-000000000000"}, {"handle": "nope"}, {"x": 1}, "not json", 42):
        item = p.recall_result("call_9", args, fmt)
        text = json.dumps(item)
        assert "recall:" in text
        if fmt == "anthropic":
            assert item["is_error"] is True
        if fmt == "gemini":
            assert "error" in item["functionResponse"]["response"]


def test_the_recall_tool_is_defined_in_each_format() -> None:
    p = policy()
    chat = p.recall_tool("openai-chat")
    assert chat["function"]["name"] == "recall"
    assert chat["function"]["parameters"]["required"] == ["handle"]
    assert p.recall_tool("openai-responses")["name"] == "recall"
    assert set(p.recall_tool("anthropic")["input_schema"]["properties"]) == {
        "handle",
        "lines",
        "grep",
    }
    assert p.recall_tool("gemini")["functionDeclarations"][0]["name"] == "recall"


def _loop_with_recall(fmt: str, p: ctxwin.Policy) -> tuple[dict[str, Any], str]:
    """An agent that reads eight files, recalls lines 10-20 of the first, then reads more
    files, so its recall round is cleared in turn."""
    first = p.apply(agent_body(reads(8), format=fmt))
    h = originals_by_output(first, ctxwin.parse(agent_body(reads(8), format=fmt), fmt))
    handle = sorted(h, key=lambda k: h[k].endswith("file 0"), reverse=True)[0]
    answer = p.recall_call({"handle": handle, "lines": "10-20"})
    rounds = [*reads(8), [("recall", {"handle": handle, "lines": "10-20"}, answer.text)]]
    rounds += reads(6)
    return agent_body(rounds, format=fmt), handle


@pytest.mark.parametrize("fmt", FORMATS)
def test_pairing_stays_valid_when_recall_calls_are_cleared_later(fmt: str) -> None:
    p = policy()
    body, handle = _loop_with_recall(fmt, p)
    assert p.recall(handle, lines="10-20").text.startswith("line 10:")
    adapter = get_adapter(fmt)
    items = body[adapter.container]
    conv = ctxwin.parse(body, fmt)
    for t in request_points(body, fmt):
        prefix = {**body, adapter.container: items[:t]} if t < len(conv.messages) else body
        out = p.apply(prefix)
        assert ctxwin.check(out.request, fmt) == []
        for h in handles(out.request):
            assert not p.recall(h).is_error
    cleared = [e for e in p.apply(body).report.edits if e.tool == "recall" and e.step == "window"]
    assert cleared, "the recall round was cleared like any other"


def test_recall_results_are_capped_by_recall_max_tokens() -> None:
    p = policy(recall={"enabled": True, "max_tokens": 300})
    body = agent_body(reads(1))
    h = handles(p.apply(body).request)[0]
    whole = p.recall(h).text
    rounds = [*reads(1), [("recall", {"handle": h}, whole)], *reads(1)]
    out = p.apply(agent_body(rounds))
    recalled = [e for e in out.report.edits if e.tool == "recall" and e.step == "cap"]
    assert recalled
    assert recalled[0].tokens_after <= 300


def test_a_selected_result_carries_the_note_and_stays_within_its_cap() -> None:
    rows = json.dumps([{"id": i, "path": f"src/m{i}.py", "body": "y" * 200} for i in range(80)])
    p = ctxwin.load_policy(
        {
            "recall": True,
            "tools": {"search": {"select": "[].path", "max_tokens": 2000}},
        }
    )
    out = p.apply(agent_body([[("search", {"q": "m"}, rows)]]))
    (res,) = results(out.conversation)
    (h,) = HANDLE_RE.findall(res.text)
    assert p.recall(h).text == rows
    assert p.counter.count(res.text) <= 2000


def test_without_recall_nothing_is_kept_and_no_handle_is_quoted() -> None:
    store = MemoryStore()
    p = ctxwin.load_policy(
        {"context_window": 20_000, "tools": {"read_file": {"max_tokens": 2000}}}, store=store
    )
    out = p.apply(agent_body(reads(8)))
    assert not handles(out.request)
    assert len(store) == 0


def test_recall_per_tool_overrides_the_defaults() -> None:
    store = MemoryStore()
    p = ctxwin.load_policy(
        {
            "context_window": 20_000,
            "recall": True,
            "tools": {"read_file": {"max_tokens": 2000, "recall": False}},
        },
        store=store,
    )
    assert not handles(p.apply(agent_body(reads(8))).request)
    q = ctxwin.load_policy(
        {"context_window": 20_000, "tools": {"read_file": {"max_tokens": 2000, "recall": True}}}
    )
    assert handles(q.apply(agent_body(reads(8))).request)


def test_the_same_content_has_the_same_handle_in_every_policy() -> None:
    a = handles(policy().apply(agent_body(reads(8))).request)
    b = handles(policy().apply(agent_body(reads(8), format="anthropic")).request)
    assert a == b


class DownStore:
    url = "down://"

    def __init__(self) -> None:
        self.calls = 0

    def get(self, key: str) -> bytes | None:
        self.calls += 1
        raise ctxwin.StoreError("connection refused", url=self.url, operation="get")

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.calls += 1
        raise ctxwin.StoreError("connection refused", url=self.url, operation="put")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_store_that_is_down_never_breaks_a_request(fmt: str) -> None:
    store = DownStore()
    p = policy(store="memory")
    p = ctxwin.Policy(p.compiled, store=store)
    out = p.apply(agent_body(reads(8), format=fmt))
    assert ctxwin.check(out.request, fmt) == []
    assert not handles(out.request)  # nothing quotes what cannot be recalled
    assert any("store down:// failed" in n for n in out.report.notes)
    assert any(e.fallback and e.fallback.startswith("store_down") for e in out.report.edits)
    assert store.calls <= 2  # after a failure the store is left alone for a while
    answer = p.recall("r-000000000000")
    assert answer.is_error
    assert "unavailable" in answer.text


def _two_workers(second: object) -> tuple[FakeSummarizer, ctxwin.Result, ctxwin.Result]:
    """The same summarizing request applied by two policies on one store: the first with
    a :class:`FakeSummarizer`, the second with ``second``."""
    store = MemoryStore()
    rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
    first = FakeSummarizer()
    a = ctxwin.load_policy(rules, summarizer=first, store=store)
    b = ctxwin.load_policy(rules, summarizer=second, store=store)
    body = agent_body(reads(3, " ".join(f"w{i}" for i in range(3000))))
    return first, a.apply(body), b.apply(body)


def test_summaries_are_shared_through_the_store() -> None:
    second = FakeSummarizer()
    first, out_a, out_b = _two_workers(second)
    assert len(first.calls) == 3
    assert not second.calls
    assert out_a.request == out_b.request


def test_summaries_are_shared_only_between_the_same_summarizer() -> None:
    other: list[str] = []

    def terse(text: str, **kw: object) -> str:
        other.append(text)
        return "terse summary"

    first, out_a, out_b = _two_workers(terse)
    assert len(first.calls) == 3
    assert len(other) == 3  # not handed the first summarizer's summaries
    assert out_a.request != out_b.request
    assert "terse summary" in json.dumps(out_b.request)


def test_an_unknown_store_url_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(ctxwin.PolicyError, match="store"):
        ctxwin.load_policy({"store": "ftp://x"})


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite", "not a SQLite store URL: 'sqlite' (use sqlite:///relative.db"),
        ("sqlite:///", "not a SQLite store URL"),
        ("redis", "store 'redis' names no server: use redis://host:port/db"),
        ("unix://?db=1", "names no socket: use unix:///path/redis.sock"),
        ("unix://:pw@", "'unix://:***@' names no socket: use unix:///path/redis.sock"),
        ("unix://redis.sock", "a host, 'redis.sock', and no socket path: redis would dial ''"),
        ("unix://tmp/redis.sock", "a host, 'tmp', which redis reads past: it would dial '/redis"),
    ],
)
def test_a_store_url_without_what_its_store_needs_is_refused_at_load(
    tmp_path: Path, url: str, said: str
) -> None:
    """``store: sqlite`` loaded, then every request noted "store sqlite failed (keeping an
    original): not a SQLite store URL" and fell back to no handle: the file and line now,
    and from the ``store=`` argument and ``open_store`` alike."""
    path = tmp_path / "p.yaml"
    path.write_text(f"recall: true\nstore: '{url}'\n")
    with pytest.raises(ctxwin.PolicyError, match=re.escape(said)) as e:
        ctxwin.load_policy(path)
    assert "p.yaml:2" in str(e.value)
    with pytest.raises(ctxwin.PolicyError, match=re.escape(said)):
        ctxwin.Policy({"recall": True}, store=url)
    with pytest.raises(ctxwin.StoreError, match=re.escape(said)):
        open_store(url)


@pytest.mark.parametrize("path", corpus_params())
def test_every_handle_in_every_replayed_corpus_request_resolves(path: Path | None) -> None:
    assert path is not None
    if path.stem in CHAINED_WITHOUT_ID:
        pytest.skip("stored without the server-side calls of its outputs")
    body = load(path)
    fmt = path.parent.name
    p = ctxwin.load_policy(
        {
            "context_window": 30_000,
            "recall": True,
            "window": {"keep_rounds": 2},
            "tools": {"*": {"max_tokens": 1000}},
        }
    )
    adapter = get_adapter(fmt)
    before_all = ctxwin.parse(body, fmt)
    container = body[adapter.container] if isinstance(body, dict) else body
    seen = 0
    for t in request_points(body, fmt)[-12:]:
        if t < len(before_all.messages) and len(container) != len(before_all.messages):
            continue  # items and messages differ: only the whole request is replayed
        prefix = {**body, adapter.container: container[:t]} if isinstance(body, dict) else body
        out = p.apply(prefix, fmt)
        assert ctxwin.check(out.request, fmt) == []
        for h, original in originals_by_output(out, ctxwin.parse(prefix, fmt)).items():
            answer = p.recall(h)
            assert not answer.is_error, (h, answer.text)
            assert answer.text == original
            seen += 1
    shortened = sum(1 for r in results(before_all) if p.counter.count(r.text) > 1000)
    assert seen or not shortened


@pytest.mark.parametrize("cap", [None, 300])
def test_a_json_selection_stays_json_with_the_recall_note_in_it(cap: int | None) -> None:
    rows = json.dumps({"matches": [{"path": f"src/m{i}.py", "body": "y" * 80} for i in range(80)]})
    rules: dict[str, Any] = {"select": "matches[].{path: path}"}
    if cap:
        rules["max_tokens"] = cap
    p = ctxwin.load_policy({"recall": True, "tools": {"search": rules}})
    out = p.apply(agent_body([[("search", {"q": "m"}, rows)]]))
    (res,) = results(out.conversation)
    value = json.loads(res.text)  # still JSON, note included
    (h,) = HANDLE_RE.findall(res.text)
    assert p.recall(h).text == rows
    assert isinstance(value, list)
    if cap:  # the cap's notice quotes the handle, where head_tail puts it
        assert p.counter.count(res.text) <= cap
    else:  # the note is the last item, as a cut's notice would be
        assert "recall(" in json.dumps(value[-1])


def test_a_result_over_the_store_limit_is_not_kept_and_the_store_stays_in_use() -> None:
    store = MemoryStore(max_bytes=50_000)  # each read is 28 kB
    huge = "\n".join(f"line {i}: " + "z" * 60 for i in range(1, 1200))  # about 80 kB
    rounds = [[("read_file", {"path": "big"}, huge)], *reads(7)]
    p = ctxwin.Policy(policy().compiled, store=store)
    out = p.apply(agent_body(rounds))
    assert ctxwin.check(out.request) == []
    assert any("1 original was over its size limit" in n for n in out.report.notes)
    assert len(handles(out.request)) == 7  # the others were kept: no cool-off for a refusal


def test_a_redis_store_without_the_client_says_how_to_install_it_at_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # makes `import redis` fail
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[redis\]'"):
        ctxwin.load_policy({"store": "redis://127.0.0.1:1/0"})


def test_a_store_that_cannot_be_opened_falls_back_and_is_tried_again(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    p = policy(store=f"sqlite:///{blocker / 'store.db'}")  # a path under a file
    out = p.apply(agent_body(reads(8)))
    assert ctxwin.check(out.request) == []
    assert not handles(out.request)
    assert any("failed" in n for n in out.report.notes)


class LoopWatchingStore:
    """A store that notes, for every call, whether it was made on an event loop's thread;
    ``put`` waits (up to 5 s) for the loop to run another task first."""

    url = "watching://"

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.on_loop: list[bool] = []
        self.loop_ran = threading.Event()
        self.waited_out = 0

    def _note(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.on_loop.append(False)
        else:
            self.on_loop.append(True)

    def get(self, key: str) -> bytes | None:
        self._note()
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self._note()
        if not self.loop_ran.wait(5):
            self.waited_out += 1  # the loop could not run while this call held it
        self.inner.put(key, value, ttl=ttl)

    def close(self) -> None:
        pass


async def _aapply_beside_a_task(p: ctxwin.Policy, body: object, store: LoopWatchingStore) -> Any:
    async def other_task() -> None:
        await asyncio.sleep(0)
        store.loop_ran.set()

    side = asyncio.create_task(other_task())
    out = await p.aapply(body)
    await side
    return out


@pytest.mark.parametrize("what", ["recall", "summaries"])
def test_aapply_makes_store_calls_off_the_event_loop(what: str) -> None:
    store = LoopWatchingStore()
    if what == "recall":
        p = ctxwin.Policy(policy().compiled, store=store)
        body = agent_body(reads(8))
    else:
        rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
        p = ctxwin.load_policy(rules, summarizer=AsyncFakeSummarizer(), store=store)
        body = agent_body(reads(3, " ".join(f"w{i}" for i in range(3000))))
    out = asyncio.run(_aapply_beside_a_task(p, body, store))
    assert store.on_loop
    assert not any(store.on_loop)
    assert store.waited_out == 0
    assert out.request == p.apply(body).request  # the same answer as apply
    if what == "recall":
        assert handles(out.request)
    else:
        assert "summary" in json.dumps(out.request).lower()


def test_aapply_under_the_memory_store_stays_on_the_loop() -> None:
    seen: list[bool] = []

    class Watching(MemoryStore):
        def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
            seen.append(threading.current_thread() is threading.main_thread())
            super().put(key, value, ttl=ttl)

    p = ctxwin.Policy(policy().compiled, store=Watching())
    out = asyncio.run(p.aapply(agent_body(reads(8))))
    assert handles(out.request)
    assert seen
    assert all(seen)  # no thread hop for a store that never waits


class CountingStore:
    """A store of its own (not MemoryStore, so treated as one that waits on I/O)."""

    url = "counting://"

    def __init__(self, ttl: float | None = None) -> None:
        self.inner = MemoryStore()
        self.ttl = ttl
        self.puts: list[str] = []

    def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.puts.append(key)
        self.inner.put(key, value, ttl=ttl)

    def close(self) -> None:
        pass


def _grow(p: ctxwin.Policy, rounds: int) -> list[ctxwin.Result]:
    history = reads(rounds)
    return [p.apply(agent_body(history[:n])) for n in range(1, rounds + 1)]


def test_a_remote_store_gets_each_original_once_and_every_handle_resolves() -> None:
    store = CountingStore()
    p = ctxwin.Policy(policy().compiled, store=store)
    outs = _grow(p, 12)
    assert store.puts
    assert len(store.puts) == len(set(store.puts))  # capped at entry, cleared later: one put
    for out in outs:
        for h in handles(out.request):
            assert not p.recall(h).is_error


@pytest.mark.parametrize("step", [0.0, 31.0])
def test_an_original_past_half_its_ttl_is_put_again(
    monkeypatch: pytest.MonkeyPatch, step: float
) -> None:
    import ctxwin.steps._shelf as shelf

    now = [1000.0]

    def clock() -> float:
        now[0] += step  # seconds between two looks at the clock
        return now[0]

    monkeypatch.setattr(shelf, "_clock", clock)
    store = CountingStore(ttl=60.0)
    _grow(ctxwin.Policy(policy().compiled, store=store), 12)
    repeated = len(store.puts) - len(set(store.puts))
    if step:
        assert repeated > 0  # cleared over half a TTL after its put: sent again, to live on
    else:
        assert repeated == 0


def test_a_store_failure_is_reported_by_the_request_it_happened_in() -> None:
    """``aapply`` awaits summaries outside the policy's lock: a request of another
    conversation that runs meanwhile must not carry this one's store failure in its report
    (the notes were one list for the whole policy)."""
    entered, gate = asyncio.Event(), asyncio.Event()

    async def summarizer(text: str, **_: Any) -> str:
        entered.set()
        await gate.wait()
        return "short"

    rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
    p = ctxwin.load_policy(rules, summarizer=summarizer, store=DownStore())
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}

    async def both() -> tuple[ctxwin.Result, ctxwin.Result]:
        first = asyncio.ensure_future(p.aapply(agent_body(reads(2))))
        await entered.wait()  # its store failed reading a summary; it waits for one
        other = await p.aapply(chat, format="openai-chat")  # no store call of its own
        gate.set()
        return await first, other

    summarized, other = asyncio.run(both())
    assert any("store down:// failed (reading a summary)" in n for n in summarized.report.notes)
    assert not [n for n in other.report.notes if "store" in n]


def test_a_request_waiting_for_its_summaries_does_not_hold_up_other_conversations() -> None:
    """One policy serves several threads. ``apply`` held the policy's lock while it waited
    for summaries (up to ``summarize.timeout``, 30 s by default), so every other request on
    the policy waited too; it now waits unlocked, as ``aapply`` does."""
    entered, release, returned = threading.Event(), threading.Event(), threading.Event()

    def summarizer(text: str, **_: Any) -> str:
        entered.set()
        release.wait(10)
        returned.set()
        return "short"

    rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
    p = ctxwin.load_policy(rules, summarizer=summarizer)
    summarized: list[ctxwin.Result] = []
    worker = threading.Thread(target=lambda: summarized.append(p.apply(agent_body(reads(2)))))
    worker.start()
    assert entered.wait(10)
    other = p.apply(agent_body(reads(1, "small")))  # another conversation, no summary
    assert not returned.is_set()  # it did not wait for the first one's summarizer
    release.set()
    worker.join(10)
    assert [e.step for e in other.report.edits] == []
    assert [e.step for e in summarized[0].report.edits] == ["summarize", "summarize"]


COMPACT = json.dumps(
    {"items": [{"id": i, "name": f"n{i}"} for i in range(20)]}, separators=(",", ":")
)
"""Compact JSON ``select: items`` saves 2 tokens of (185 -> 183), less than the recall note."""


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_selection_not_shorter_with_its_recall_note_keeps_the_result_whole(fmt: str) -> None:
    """The note was added after select saved 2 tokens: 185 tokens went out as 214, quoting a
    handle of an original barely longer (review s50-8 finding 1)."""
    config = {"recall": True, "tools": {"search": {"select": "items"}}}
    body = agent_body([[("search", {"q": 1}, COMPACT)], [("x", {}, "ok")]], format=fmt)
    out = ctxwin.load_policy(config).apply(body, format=fmt)
    assert results(out.conversation)[0].text == COMPACT
    assert not handles(out.request)
    (edit,) = out.report.edits
    assert (edit.step, edit.tokens_before, edit.tokens_after) == ("select", 185, 185)
    assert (
        edit.note
        == "selection with its recall note not shorter (214 >= 185 tokens): result kept whole"
    )
    again = ctxwin.load_policy(config).apply(out.request, format=fmt)  # a fixed point
    assert again.request == out.request
    assert again.report.edits == out.report.edits


def test_a_selection_shorter_with_its_recall_note_is_sent_with_it() -> None:
    wide = json.dumps({"items": [{"id": i, "name": f"n{i}"} for i in range(20)], "more": "m" * 200})
    p = ctxwin.load_policy({"recall": True, "tools": {"search": {"select": "items"}}})
    out = p.apply(agent_body([[("search", {"q": 1}, wide)], [("x", {}, "ok")]]))
    res = results(out.conversation)[0]
    (h,) = HANDLE_RE.findall(res.text)
    assert p.recall(h).text == wide
    (edit,) = out.report.edits
    assert edit.tokens_after == p.counter.count(res.text) < edit.tokens_before
