"""Token counting: exact offline loading, verification, fallback, memo."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import PolicyError
from ctxwin.tokens import counters as tokens
from ctxwin.tokens.counters import (
    ApproximateCounter,
    CallableCounter,
    CounterFallbackWarning,
    MemoCounter,
    TiktokenCounter,
    get_counter,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting must never touch the network."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No user dir, an empty tiktoken cache, and a fresh in-process encoding cache."""
    monkeypatch.delenv("CTXWIN_TIKTOKEN_DIR", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "_warned", set())
    return tmp_path


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [
        # Known token ids of tiktoken's published encodings.
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "hello world", [15339, 1917]),
    ],
)
def test_bundled_encodings_count_exactly_offline(
    isolated: Path, encoding: str, text: str, expected: list[int]
) -> None:
    counter = TiktokenCounter(encoding)
    assert (counter.name, counter.exact) == (encoding, True)
    assert counter.encode(text) == expected
    assert counter.count(text) == len(expected)


def test_non_ascii_text_is_counted_as_written(isolated: Path) -> None:
    counter = TiktokenCounter("o200k_base")
    text = "東京の天気は晴れです"
    assert counter.decode(counter.encode(text)) == text
    assert counter.count(text) < len(text.encode("unicode_escape"))  # not \u-escaped


def test_a_file_in_the_user_dir_is_used_when_its_hash_matches(isolated: Path) -> None:
    """A verified rank file in CTXWIN_TIKTOKEN_DIR is preferred (here: written from the bundle)."""
    ranks_dir = isolated / "ranks"
    ranks_dir.mkdir()
    spec_text = _bundled_tiktoken_file("cl100k_base")
    (ranks_dir / "cl100k_base.tiktoken").write_bytes(spec_text)
    ranks, source = tokens._load_ranks("cl100k_base", str(ranks_dir))  # type: ignore[misc]
    assert source == str(ranks_dir / "cl100k_base.tiktoken")
    assert len(ranks) == 100256


def test_a_file_with_a_wrong_hash_is_refused(isolated: Path) -> None:
    ranks_dir = isolated / "ranks"
    ranks_dir.mkdir()
    (ranks_dir / "cl100k_base.tiktoken").write_bytes(b"aGVsbG8= 0\n")
    found = tokens._load_ranks("cl100k_base", str(ranks_dir))
    assert found is not None
    assert found[1].startswith("quicktok-v1:")  # fell through to the verified bundle


def test_unknown_encoding_falls_back_with_one_warning(isolated: Path) -> None:
    with pytest.warns(CounterFallbackWarning, match="'p50k_base' is not one ctxwin knows"):
        counter = TiktokenCounter("p50k_base")
    assert (counter.name, counter.exact) == ("o200k_base", False)
    TiktokenCounter("p50k_base")  # no second warning (filterwarnings=error would fail)


def test_without_any_rank_data_counting_is_an_estimate(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "_load_ranks", lambda name, data_dir: None)
    with pytest.warns(CounterFallbackWarning, match="counting with approx-4-chars instead"):
        counter = TiktokenCounter("o200k_base")
    assert (counter.name, counter.exact, counter.can_encode) == ("approx-4-chars", False, False)
    assert counter.count("abcdefgh") == 2


def test_memo_counts_each_distinct_text_once() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text)

    memo = MemoCounter(CallableCounter(count, name="len"))
    assert [memo.count("ab"), memo.count("ab"), memo.count("abc")] == [2, 2, 3]
    assert calls == ["ab", "abc"]
    assert (memo.name, memo.exact) == ("len", True)


def test_memo_is_bounded() -> None:
    memo = MemoCounter(ApproximateCounter(), max_entries=2)
    for t in ["a", "b", "c"]:
        memo.count(t)
    assert list(memo._memo) == ["b", "c"]


def test_a_memo_shared_counts_once_for_both_under_the_first_ones_bound() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text)

    first = MemoCounter(CallableCounter(count, name="len"), max_entries=2)
    second = MemoCounter(first.inner, sharing=first)
    assert [first.count("ab"), second.count("ab"), second.count("abc")] == [2, 2, 3]
    assert calls == ["ab", "abc"]
    second.count("d")
    assert list(first._memo) == ["abc", "d"]  # the bound of the memo's owner


def test_get_counter_accepts_names_counters_and_callables() -> None:
    assert isinstance(get_counter("approx"), ApproximateCounter)
    c = get_counter(lambda text: 7)
    assert (c.count("x"), c.exact) == (7, True)
    approx = ApproximateCounter()
    assert get_counter(approx) is approx


def test_get_counter_refuses_what_is_no_counter_as_load_policy_does() -> None:
    """A typed error with load_policy's words for the same value, not a bare TypeError."""
    with pytest.raises(PolicyError) as info:
        get_counter(3)  # type: ignore[arg-type]
    with pytest.raises(PolicyError) as by_policy:
        ctxwin.load_policy({"context_window": 1000}, counter=3)
    assert (info.value.key, info.value.reason) == (
        "counter",
        "must be a TokenCounter, a callable(text) -> int or a tokenizer name, not int 3",
    )
    assert (by_policy.value.key, by_policy.value.reason) == (info.value.key, info.value.reason)


@pytest.mark.parametrize("spec", [lambda: 1, lambda text, model: 1], ids=["none", "two"])
def test_a_callable_that_cannot_take_a_text_is_refused_where_it_is_given(spec: Any) -> None:
    """It loaded, and the first apply ended in a bare TypeError from inside the meter
    (review s50-6); a callable that takes the text alone, or with defaults, still counts."""
    words = "must be a TokenCounter, a callable(text) -> int or a tokenizer name, not function"
    reason = f"{words} that cannot be called with a text alone"
    with pytest.raises(PolicyError) as info:
        get_counter(spec)
    assert (info.value.key, info.value.reason) == ("counter", reason)
    with pytest.raises(PolicyError) as by_policy:
        ctxwin.load_policy({"context_window": 1000}, counter=spec)
    assert by_policy.value.reason == reason
    with pytest.raises(PolicyError, match="that cannot be called with a text alone"):
        ctxwin.Policy({"context_window": 1000}, model_counters={"gpt-x": spec})
    assert get_counter(lambda text, model=None: 7).count("abc") == 7
    assert get_counter(len).count("abc") == 3


def test_public_names() -> None:
    assert ctxwin.TiktokenCounter is TiktokenCounter


def _bundled_tiktoken_file(name: str) -> bytes:
    import importlib.util

    spec = importlib.util.find_spec("quicktok")
    assert spec is not None
    assert spec.origin is not None
    vocab = Path(spec.origin).parent / "data" / tokens._QUICKTOK_FILES[name]
    _, text = tokens._parse_quicktok_vocab(vocab.read_bytes())
    assert hashlib.sha256(text).hexdigest() == tokens._ENCODINGS[name][0]
    return text
