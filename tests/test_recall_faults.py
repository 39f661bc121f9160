"""Recall against what production brings: results that are not all text, and store objects
of the user's own that break the store contract (their own exceptions, values of another
type)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import ctxwin
from ctxwin.steps._shelf import HANDLE_RE
from ctxwin.stores import MemoryStore
from ctxwin.testing import agent_body

IMAGE = {
    "type": "image",
    "source": {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(b"\x89PNG" + b"x" * 30_000).decode(),
    },
}
WINDOW = {"context_window": 3000, "recall": True, "window": {"keep_rounds": 1}}
LINES = "\n".join(f"line {i}: " + "x" * 60 for i in range(1, 300))


def handles(body: object) -> set[str]:
    return set(HANDLE_RE.findall(json.dumps(body)))


def screenshots(contents: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """An Anthropic body: one screenshot call per content, each answered by it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look"}]
    for i, content in enumerate(contents):
        use = {"type": "tool_use", "id": f"t{i}", "name": "screenshot", "input": {}}
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": content}
        messages.append({"role": "user", "content": [result]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages}


def cleared(body: dict[str, Any]) -> list[str]:
    """The texts of the results the window cleared."""
    out = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                texts = [p["text"] for p in block["content"] if p.get("type") == "text"]
                if texts and "result cleared" in texts[0]:
                    out.append(texts[0])
    return out


@pytest.mark.parametrize(
    "content",
    [[IMAGE], [{"type": "text", "text": "caption " * 50}, IMAGE]],
    ids=["image alone", "text and image"],
)
def test_a_cleared_result_with_an_image_quotes_no_handle(content: list[dict[str, Any]]) -> None:
    """The recall tool answers text: a handle for an image-only result gave back "" as the
    "exact original", and one for a captioned image gave the caption without the image."""
    policy = ctxwin.load_policy(WINDOW)
    out = policy.apply(screenshots([content, content, [{"type": "text", "text": "last"}]]))
    gone = cleared(out.request)
    assert gone
    assert not handles(out.request)
    assert all("recall(" not in text for text in gone)


def test_a_cleared_text_result_still_quotes_its_handle() -> None:
    policy = ctxwin.load_policy(WINDOW)
    text = [{"type": "text", "text": LINES}]
    out = policy.apply(screenshots([text, [{"type": "text", "text": "last"}]]))
    (handle,) = handles(out.request)
    assert policy.recall(handle).text == LINES


# ------------------------------------------------------------- store objects of the user's


class RaisingStore:
    """A store of the user's own that lets its driver's exception out."""

    url = "custom://cache"

    def __init__(self) -> None:
        self.calls = 0

    def get(self, key: str) -> bytes | None:
        self.calls += 1
        raise ConnectionError("connection reset by peer")

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.calls += 1
        raise ConnectionError("connection reset by peer")

    def close(self) -> None:
        pass


class TextStore(MemoryStore):
    """A store of the user's own that gives back text (a client that decodes responses)."""

    url = "custom://text"

    def get(self, key: str) -> Any:
        value = super().get(key)
        return None if value is None else value.decode("utf-8")


RULES = {"context_window": 8000, "recall": True, "window": {"keep_rounds": 1}}
READS = [[("read_file", {"path": f"f{n}"}, f"{LINES}\nfile {n}")] for n in range(4)]


def test_a_store_object_raising_its_own_exception_is_a_fallback_not_a_crash() -> None:
    store = RaisingStore()
    policy = ctxwin.load_policy(RULES, store=store)
    out = policy.apply(agent_body(READS))
    assert ctxwin.check(out.request) == []
    assert not handles(out.request)
    notes = " ".join(out.report.notes)
    assert "store custom://cache failed (keeping an original)" in notes
    assert "ConnectionError: connection reset by peer" in notes
    assert store.calls == 1  # then left alone for the cool-off, as a StoreError is
    answer = policy.recall("r-000000000000")
    assert answer.is_error
    assert "unavailable" in answer.text


def test_a_store_object_raising_its_own_exception_falls_back_for_summaries() -> None:
    rules = {"tools": {"read_file": {"summarize": {"over_tokens": 500, "max_tokens": 400}}}}
    summarizer = ctxwin.testing.FakeSummarizer()
    policy = ctxwin.load_policy(rules, summarizer=summarizer, store=RaisingStore())
    body = agent_body([[("read_file", {}, " ".join(f"w{i}" for i in range(3000)))]])
    out = policy.apply(body)
    assert len(summarizer.calls) == 1  # made here: the store could not say
    assert [e.step for e in out.report.edits] == ["summarize"]
    assert any("failed (reading a summary)" in n for n in out.report.notes)


def test_a_store_object_giving_back_text_is_an_error_answer_not_an_exception() -> None:
    """To a policy without the original in memory (which says why in its notes, not to
    the model); the one that put it answers from memory (and notes the failure)."""
    store = TextStore()
    policy = ctxwin.load_policy(RULES, store=store)
    out = policy.apply(agent_body(READS))
    handle = sorted(handles(out.request))[0]
    other = ctxwin.load_policy(RULES, store=store)
    answer = other.recall(handle)
    assert (answer.text, answer.is_error) == (
        "recall: the store is unavailable; try again later",
        True,
    )
    assert any("is str, not bytes" in n for n in other.apply(agent_body(READS)).report.notes)
    assert policy.recall(handle).text.startswith("line 1: ")
    assert any("is str, not bytes" in n for n in policy.apply(agent_body(READS)).report.notes)


def test_a_store_object_giving_back_a_bytearray_is_read() -> None:
    class ArrayStore(MemoryStore):
        def get(self, key: str) -> Any:
            value = super().get(key)
            return None if value is None else bytearray(value)

    policy = ctxwin.load_policy(RULES, store=ArrayStore())
    out = policy.apply(agent_body(READS))
    handle = sorted(handles(out.request))[0]
    assert policy.recall(handle).text.startswith("line 1: ")


class FullDisk:
    """A store whose every put fails as a full disk does (a StoreError)."""

    url = "sqlite:////full/store.db"

    def get(self, key: str) -> bytes | None:
        return None

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        raise ctxwin.StoreError(
            f"{self.url}: put failed: OperationalError: database or disk is full",
            url=self.url,
            operation="put",
        )

    def close(self) -> None:
        pass


def test_a_store_failure_is_one_note_not_one_more_for_its_cool_off() -> None:
    """The puts after the first failure in the same request, refused by the cool-off, added
    a second note ("failed (keeping an original): not asked again yet after: ...")."""
    policy = ctxwin.load_policy(RULES, store=FullDisk())
    out = policy.apply(agent_body(READS))
    assert out.report.notes == (
        "store sqlite:////full/store.db failed (keeping an original): sqlite:////full/store.db: "
        "put failed: OperationalError: database or disk is full; fell back",
    )
    later = policy.apply(agent_body([*READS, *READS]))  # within the cool-off: still said
    assert len(later.report.notes) == 1
    assert "not asked again yet after" in later.report.notes[0]


class Remote:
    """A store that is not this process's memory (as a shelf sees it), counting its puts."""

    url = "remote://"

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.puts = 0

    def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        self.puts += 1
        self.inner.put(key, value, ttl=ttl)

    def close(self) -> None:
        self.inner.close()


def test_without_a_ttl_an_original_is_sent_again_now_and_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a TTL an original was sent once for the life of the process: one the store
    lost behind its back (an eviction, a restart) stayed unknown while its handle was
    quoted in every request."""
    import ctxwin.steps._shelf as shelf

    now = [1000.0]
    monkeypatch.setattr(shelf, "_clock", lambda: now[0])
    store = Remote()
    policy = ctxwin.load_policy(RULES, store=store)
    kept = handles(policy.apply(agent_body(READS)).request)  # each request a body of its own
    sent = store.puts
    assert sent == len(kept)
    store.close()  # every value lost, without the recall that would tell
    now[0] += 60
    policy.apply(agent_body(READS))
    assert store.puts == sent  # a minute later: not sent again
    now[0] += shelf.KEPT_REFRESH
    policy.apply(agent_body(READS))
    assert store.puts == 2 * sent
    assert [h for h in kept if policy.recall(h).is_error] == []


def test_a_recall_that_misses_an_original_this_policy_kept_has_them_all_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctxwin.steps._shelf as shelf

    monkeypatch.setattr(shelf, "KEPT_TEXT", 0)  # no original in memory to answer with
    store = Remote()
    policy = ctxwin.load_policy(RULES, store=store)
    kept = handles(policy.apply(agent_body(READS)).request)
    store.close()  # a flush, a restart without persistence
    answer = policy.recall(sorted(kept)[0])
    assert answer.is_error
    assert answer.text.startswith(f"recall: the store no longer holds {sorted(kept)[0]}")
    assert policy.recall("r-000000000000").text == (
        "recall: unknown handle r-000000000000 (expired or never kept)"
    )
    policy.apply(agent_body(READS))
    assert [h for h in kept if policy.recall(h).is_error] == []


def test_a_recall_that_misses_an_original_this_policy_kept_answers_it_from_memory() -> None:
    store = Remote()
    policy = ctxwin.load_policy(RULES, store=store)
    kept = sorted(handles(policy.apply(agent_body(READS)).request))
    store.close()  # a flush, a restart without persistence
    answer = policy.recall(kept[0])
    assert not answer.is_error
    assert store.inner.get("recall:" + kept[0]) == answer.text.encode()  # and put back


# ------------------------------------------------------------- a window clearing, store down

CLEARED_DOWN = "store_down: cleared without a recall handle"


def test_a_window_clearing_made_while_the_store_is_down_says_so_in_its_edit() -> None:
    """The placeholder rightly quoted no handle, but the window's edit had no fallback:
    the report showed a clearing without recall as if nothing had gone wrong."""
    policy = ctxwin.load_policy(RULES, store=FullDisk())
    out = policy.apply(agent_body(READS))
    window = [e for e in out.report.edits if e.step == "window"]
    assert window
    assert not handles(out.request)
    assert [e.fallback for e in window] == [CLEARED_DOWN] * len(window)
    assert f"fallbacks       {CLEARED_DOWN} x{len(window)}" in out.report.to_text()
    assert [e["fallback"] for e in json.loads(out.report.to_json())["edits"]] == [
        CLEARED_DOWN
    ] * len(window)


def test_a_result_capped_while_the_store_was_down_and_cleared_later_says_so_twice() -> None:
    """The cap could not keep the original, so the window's placeholder cannot quote it:
    both edits say why."""
    rules = {**RULES, "tools": {"read_file": {"max_tokens": 1000}}}
    policy = ctxwin.load_policy(rules, store=FullDisk())
    out = policy.apply(agent_body(READS))
    by_step = {e.step: set() for e in out.report.edits}
    for e in out.report.edits:
        by_step[e.step].add(e.fallback)
    assert by_step == {
        "cap": {"store_down: kept without a recall handle"},
        "window": {CLEARED_DOWN},
    }
    assert not handles(out.request)


def test_a_window_clearing_with_the_store_up_or_of_an_image_has_no_fallback() -> None:
    up = ctxwin.load_policy(RULES).apply(agent_body(READS))
    assert [e for e in up.report.edits if e.step == "window"]
    assert all(e.fallback is None for e in up.report.edits)
    image = ctxwin.load_policy(WINDOW, store=FullDisk())  # no handle for an image anyway
    out = image.apply(screenshots([[IMAGE], [IMAGE], [{"type": "text", "text": "last"}]]))
    assert [e.step for e in out.report.edits] == ["window"]
    assert out.report.edits[0].fallback is None
