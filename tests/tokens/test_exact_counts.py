"""Counts equal tiktoken's (``encode(text, disallowed_special=())``) on every string: every
code point in short contexts, the characters the engines split differently, lone
surrogates, and mixed strings (hypothesis). The per-string sweep of every code point is
``benchmarks/exact_counts.py``; here the same contexts are checked in chunks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.tokens import TiktokenCounter
from ctxwin.tokens._exact import DIVERGENT, diverges
from ctxwin.tokens.counters import _encoding

ENCODINGS = ("o200k_base", "cl100k_base")
CONTEXTS: tuple[Callable[[str], str], ...] = (
    lambda c: c,
    lambda c: c + "'l",
    lambda c: "a" + c + " b",
    lambda c: c * 3,
    lambda c: c + "123",
    lambda c: "'" + c + "s",
)
DIVERGENT_CPS = [cp for a, z in DIVERGENT for cp in range(a, z + 1)]
_DIVERGENT_SET = set(DIVERGENT_CPS)
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udcff", "\udfff", "\ud83d\ude00", "\ude00\ud83d"]


@pytest.fixture(scope="module", params=ENCODINGS)
def engines(request: Any) -> tuple[TiktokenCounter, Any]:
    counter = TiktokenCounter(request.param)
    assert counter.engine == "quicktok"  # the fast path is what is under test
    return counter, _encoding(request.param, None)


def reference(enc: Any, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


def test_the_reported_case_counts_as_tiktoken_does(engines: tuple[TiktokenCounter, Any]) -> None:
    counter, enc = engines
    assert counter.count("\u088f'l") == reference(enc, "\u088f'l") == 5


@pytest.mark.parametrize("text", [*SURROGATES, "a\udcffb", "x \ud800'll 12\udfff"])
def test_lone_surrogates_count_as_tiktoken_counts_their_replacement(
    engines: tuple[TiktokenCounter, Any], text: str
) -> None:
    """tiktoken counts after a UTF-16 round trip: a lone surrogate is U+FFFD, a pair its
    character; never a TypeError."""
    counter, enc = engines
    assert counter.count(text) == reference(enc, text)
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert counter.count(text) == reference(enc, fixed)
    assert counter.decode(counter.encode(text)) == fixed


def test_every_divergent_character_counts_as_tiktoken_in_every_context(
    engines: tuple[TiktokenCounter, Any],
) -> None:
    counter, enc = engines
    wrong = [
        (hex(cp), i)
        for cp in DIVERGENT_CPS
        for i, ctx in enumerate(CONTEXTS)
        if counter.count(s := ctx(chr(cp))) != reference(enc, s)
    ]
    assert wrong == []


def chunks(size: int = 256) -> list[list[str]]:
    """Every code point but the divergent ones and surrogates, in runs of ``size``."""
    cps = [
        chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp not in _DIVERGENT_SET
    ]
    return [cps[i : i + size] for i in range(0, len(cps), size)]


@pytest.mark.parametrize("context", range(len(CONTEXTS)))
def test_every_other_code_point_stays_fast_and_agrees_token_for_token(
    engines: tuple[TiktokenCounter, Any], context: int
) -> None:
    """Each chunk joins one context of 256 code points with newlines. None is routed to
    tiktoken, and the fast engine gives tiktoken's very tokens on it (not just the count:
    no error can hide behind another)."""
    import quicktok  # type: ignore[import-untyped]

    counter, enc = engines
    fast = quicktok.get_encoding(counter.name)
    ctx = CONTEXTS[context]
    wrong, routed = [], []
    for chunk in chunks():
        text = "\n".join(ctx(c) for c in chunk)
        if diverges(text):
            routed.append(hex(ord(chunk[0])))
        elif fast.encode(text) != enc.encode_ordinary(text):
            wrong.append(hex(ord(chunk[0])))
    assert (wrong, routed) == ([], [])


PIECES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            *(chr(cp) for cp in DIVERGENT_CPS[::97]),
            *SURROGATES,
            "'s",
            "'LL",
            "'ve",
            "'Re",
            " ",
            "\n",
            "\r\n",
            "\t",
            "   ",
            "\u00a0",
            "\u3000",
            "123",
            "4567",
            "é",
            "e\u0301",
            "İ",
            "ſ",
            "東京",
            "🙂",
            "👍🏽",
            "\U0001fae8",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(PIECES, max_size=12), encoding=st.sampled_from(ENCODINGS))
def test_mixed_strings_count_as_tiktoken_does(parts: list[str], encoding: str) -> None:
    text = "".join(parts)
    counter = TiktokenCounter(encoding)
    assert counter.count(text) == reference(_encoding(encoding, None), text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40))
def test_any_code_points_count_as_tiktoken_does(text: str) -> None:
    for encoding in ENCODINGS:
        assert TiktokenCounter(encoding).count(text) == reference(_encoding(encoding, None), text)
