"""Recall handles: 16 hex digits of the SHA-256 (64 bits), and the 12-digit handles of
placeholders written before still recalled from where they were kept."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

import ctxwin
import ctxwin.steps._shelf as shelf_module
from ctxwin.steps._shelf import HANDLE_RE, handle_of
from ctxwin.stores import MemoryStore
from ctxwin.testing import agent_body

FILE = "".join(f"{n:4d}  setting_{n} = {n * 7}\n" for n in range(1, 200))
COLLIDING = (FILE + "# build 3447309\n", FILE + "# build 31272135\n")
"""Two originals whose SHA-256 share their first 12 hex digits (280f55a8be7d), found by a
birthday search over 2^25 builds: one 48-bit handle for both."""
RULES: dict[str, Any] = {
    "context_window": 6000,
    "recall": True,
    "window": {"keep_rounds": 1, "trigger": 0.3, "target": 0.1},
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def old_handle(text: str) -> str:
    """The handle ctxwin quoted before handles grew to 16 digits."""
    return "r-" + sha(text)[:12]


def handles(body: object) -> set[str]:
    return set(HANDLE_RE.findall(json.dumps(body)))


def reads(*texts: str) -> dict[str, Any]:
    """A body reading each text, then one last small read (the kept round)."""
    rounds = [[("read_file", {"path": f"f{i}.py"}, t)] for i, t in enumerate(texts)]
    return agent_body([*rounds, [("read_file", {"path": "last.py"}, "small")]])


def test_a_handle_is_16_hex_digits_of_the_sha256() -> None:
    policy = ctxwin.load_policy(RULES)
    out = policy.apply(reads(FILE + "a", FILE + "b"))
    assert handles(out.request) == {"r-" + sha(FILE + "a")[:16], "r-" + sha(FILE + "b")[:16]}
    assert handle_of(FILE) == "r-" + sha(FILE)[:16]


def test_two_originals_sharing_48_bits_each_recall_their_own() -> None:
    """With 12-digit handles both placeholders quoted one handle, kept once: recall of the
    first silently gave back the second (its hash began with the same 12 digits)."""
    first, second = COLLIDING
    assert sha(first)[:12] == sha(second)[:12]  # the pair does collide at 48 bits
    policy = ctxwin.load_policy(RULES)
    out = policy.apply(reads(first, second))
    quoted = handles(out.request)
    assert len(quoted) == 2
    assert sorted(policy.recall(h).text for h in quoted) == sorted(COLLIDING)
    assert policy.recall(handle_of(first)).text == first
    assert policy.recall(handle_of(second)).text == second


@pytest.mark.parametrize("url", ["memory", "sqlite"])
def test_an_old_12_digit_handle_still_recalls_its_original(url: str, tmp_path: Any) -> None:
    """A placeholder written before the upgrade quotes 12 digits: its original, kept then
    under ``recall:`` + that handle, is still what recall gives back, whole or in part."""
    store_url = f"sqlite:///{tmp_path / 'store.db'}" if url == "sqlite" else url
    store = ctxwin.stores.open_store(store_url)
    old = old_handle(FILE)
    store.put("recall:" + old, FILE.encode())  # as ctxwin kept it before
    policy = ctxwin.load_policy(RULES, store=store)
    assert policy.recall(old).text == FILE
    assert policy.recall(old, lines="2").text == "   2  setting_2 = 14\n"
    assert policy.recall(old, grep="setting_19 ").text == "19:  19  setting_19 = 133"
    answer = policy.recall_result("call_1", {"handle": old}, "openai-chat")
    assert answer == {"role": "tool", "tool_call_id": "call_1", "content": FILE}
    store.close()


@pytest.mark.parametrize("length", [12, 16])
def test_a_value_whose_hash_is_not_its_handle_is_corrupted_at_either_length(length: int) -> None:
    store = MemoryStore()
    handle = "r-" + sha(FILE)[:length]
    store.put("recall:" + handle, (FILE + "tampered").encode())
    policy = ctxwin.load_policy(RULES, store=store)
    answer = policy.recall(handle)
    assert answer.is_error
    assert answer.text == f"recall: the value kept for {handle} is corrupted"


def test_a_corrupted_value_the_policy_holds_is_answered_and_put_back() -> None:
    """A damaged value (a torn or foreign write) was refused for good, though the policy
    that put it held the exact original in memory, as it answers a missing one."""
    store = MemoryStore()
    policy = ctxwin.load_policy(RULES, store=store)
    handle = policy.shelf.keep(FILE)
    assert handle is not None
    store.put("recall:" + handle, b"garbage")
    assert policy.recall(handle).text == FILE
    assert store.get("recall:" + handle) == FILE.encode()  # put back
    assert policy.shelf.lost_at > float("-inf")  # the store may have lost others too


def test_a_corrupted_value_the_policy_put_and_no_longer_holds_says_when_to_try_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shelf_module, "KEPT_TEXT", 0)  # the shelf keeps no original
    store = MemoryStore()
    policy = ctxwin.load_policy(RULES, store=store)
    handle = policy.shelf.keep(FILE)
    assert handle is not None
    store.put("recall:" + handle, b"garbage")
    answer = policy.recall(handle)
    assert answer.is_error
    assert answer.text == (
        f"recall: the value kept for {handle} is corrupted; it is kept again with the next "
        "request that still holds the result: try again then"
    )


def test_handles_are_found_at_either_length_and_nothing_between() -> None:
    new, old = "r-" + "a" * 16, "r-" + "b" * 12
    text = f'recall("{new}") recall("{old}") r-{"c" * 14} r-{"d" * 17} xr-{"e" * 12}'
    assert HANDLE_RE.findall(text) == [new, old]
    policy = ctxwin.load_policy(RULES)
    for bad in (f"r-{'c' * 14}", f"r-{'d' * 17}", f"r-{'A' * 16}"):
        answer = policy.recall(bad)
        assert answer.is_error
        assert answer.text == (
            f"recall: {bad!r} is not a handle (handles look like r-3f9a2c1b0d4e5a67)"
        )
    assert policy.recall(new).text == f"recall: unknown handle {new} (expired or never kept)"
