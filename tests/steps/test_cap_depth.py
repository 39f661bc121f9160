"""cap on real tool outputs: within the cap whatever the notice, valid and sendable JSON,
numbers as the tool wrote them."""

from __future__ import annotations

import json
import re
from typing import Any

import ctxwin
from ctxwin.tokens import TiktokenCounter
from tests.steps.conftest import body_with_result, result_text

COUNTER = TiktokenCounter("o200k_base")
LONG_TOOL = "mcp__github__search_repositories_with_filters_and_sorting"


def cap(n: int, **rules: Any) -> dict[str, Any]:
    return {"tools": {"*": {"max_tokens": n, **rules}}}


def test_a_notice_longer_than_the_cap_gives_way_to_the_short_notice(apply_one: Any) -> None:
    result, text = apply_one(cap(24), "word " * 2000, tool=LONG_TOOL)
    assert COUNTER.count(text) <= 24
    assert "[... 1992 of 2001 tokens cut ...]" in text
    assert result.report.edits[0].tokens_after == COUNTER.count(text)


def test_a_json_cut_whose_notice_is_too_long_stays_json_within_the_cap(apply_one: Any) -> None:
    _, text = apply_one(cap(24), json.dumps(list(range(2000))), tool=LONG_TOOL)
    assert COUNTER.count(text) <= 24
    assert json.loads(text)[-1] == {"...": "[... 6992 of 7000 tokens cut ...]"}


def test_with_recall_a_small_cap_is_honoured_and_quotes_the_handle() -> None:
    policy = ctxwin.Policy({"recall": True, **cap(40)}, format="openai-chat")
    result = policy.apply(body_with_result("[" * 150 + "1" + "]" * 150))
    text = result_text(result)
    assert COUNTER.count(text) <= 40
    handle = re.search(r'recall\("(r-[0-9a-f]+)"\)', text)
    assert handle is not None
    assert policy.recall(handle.group(1)).text == "[" * 150 + "1" + "]" * 150


def test_with_recall_a_small_cap_applied_again_changes_nothing() -> None:
    """The notice alone used to be over the cap: capped again, under a new handle (of the
    notice, not of the original)."""
    policy = ctxwin.Policy({"recall": True, **cap(40)}, format="openai-chat")
    first = policy.apply(body_with_result("[" * 150 + "1" + "]" * 150))
    again = policy.apply(first.request)
    assert again.request == first.request
    assert again.report.edits == ()


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def test_a_cap_below_even_the_short_notice_says_so(apply_one: Any) -> None:
    result, text = apply_one(cap(24), "x" * 5000, counter=utf8_bytes)
    assert text == "[... 5000 of 5000 tokens cut ...]"
    (edit,) = result.report.edits
    assert edit.note == "max_tokens 24 is below the notice"


KEPT_WHOLE = "max_tokens 24 is below the notice: result kept whole"


def test_a_result_just_over_a_cap_below_the_short_notice_is_kept_whole_and_said() -> None:
    """26 bytes against a cap of 24: the short notice alone is longer than the result, so
    the result goes whole, over its cap; the report says so, the same on its own output."""
    policy = ctxwin.Policy(cap(24), counter=utf8_bytes, format="openai-chat")
    text = "0123456789" * 2 + "abcdef"
    first = policy.apply(body_with_result(text))
    assert result_text(first) == text
    (edit,) = first.report.edits
    assert (edit.step, edit.tokens_before, edit.tokens_after) == ("cap", 26, 26)
    assert edit.note == KEPT_WHOLE
    again = policy.apply(first.request)
    assert again.request == first.request
    assert again.report.edits == first.report.edits


def test_with_recall_a_result_of_25_tokens_over_a_cap_of_24_is_kept_whole_and_said() -> None:
    """The recall short notice is 23 to 25 tokens (as its handle falls): of 25 for this
    text, it cannot stand for it."""
    policy = ctxwin.Policy({"recall": True, **cap(24)}, format="openai-chat")
    text = " ".join(f"w{i}" for i in range(6, 18)) + " x"
    assert COUNTER.count(text) == 25
    first = policy.apply(body_with_result(text))
    assert result_text(first) == text
    assert [(e.step, e.tokens_before, e.tokens_after, e.note) for e in first.report.edits] == [
        ("cap", 25, 25, KEPT_WHOLE)
    ]
    assert policy.apply(first.request).report.edits == first.report.edits


def test_a_cap_below_the_notice_is_said_with_separators(apply_one: Any) -> None:
    def costly(text: str) -> int:  # a notice of ~30 bytes costs ~3,000 tokens
        return 100 * utf8_bytes(text)

    result, _ = apply_one(cap(2400), "x" * 5000, counter=costly)
    (edit,) = result.report.edits
    assert edit.note == "max_tokens 2,400 is below the notice"


def test_a_cap_below_even_the_short_notice_applied_again_changes_nothing() -> None:
    policy = ctxwin.Policy(cap(24), counter=utf8_bytes, format="openai-chat")
    first = policy.apply(body_with_result("x" * 5000))
    again = policy.apply(first.request)
    assert again.request == first.request
    assert again.report.edits == ()


def test_a_json_cut_escapes_lone_surrogates_so_the_request_can_be_sent(apply_one: Any) -> None:
    content = "[" + ",".join('"ab\\ud83dcd"' for _ in range(40)) + "]"
    result, text = apply_one(cap(40), content)
    assert result.report.edits[0].note == "cut on JSON structure"
    json.dumps(result.request, ensure_ascii=False).encode("utf-8")  # what httpx does
    assert json.loads(text)[0] == "ab\ud83dcd"


def test_a_json_cut_never_rewrites_a_number_beyond_float_range(apply_one: Any) -> None:
    content = json.dumps([{"i": i, "v": "x" * 20} for i in range(30)])[:-1] + ',{"n":1e400}]'
    _, text = apply_one(cap(40, truncate="tail"), content)
    assert "Infinity" not in text
    assert text.endswith('{"n":1e400}]')


def test_a_json_cut_of_a_number_past_decimals_exponents_is_a_cut_as_text(apply_one: Any) -> None:
    """``1e-99999999999999999999`` is JSON (its float is 0.0); telling whether its float
    says it raised decimal.InvalidOperation out of apply (review s50-6). It cannot be
    written back: the result is cut as text, the number kept as it came."""
    far = "1e-99999999999999999999"
    content = json.dumps([{"i": i, "v": "x" * 20} for i in range(30)])[:-1] + f',{{"n":{far}}}]'
    result, text = apply_one(cap(40, truncate="tail"), content)
    assert result.report.edits[0].step == "cap"
    assert text.endswith(f'{{"n":{far}}}]')


def test_a_json_cut_never_rounds_a_long_decimal(apply_one: Any) -> None:
    pi = "3.14159265358979323846264338327950288"
    _, text = apply_one(cap(40, truncate="head"), "[" + ",".join([pi] * 40) + "]")
    assert text.startswith("[" + pi)


def test_json_with_a_byte_order_mark_is_cut_on_its_structure(apply_one: Any) -> None:
    result, text = apply_one(cap(40), "\ufeff" + json.dumps(list(range(200))))
    assert result.report.edits[0].note == "cut on JSON structure"
    assert json.loads(text)[:3] == [0, 1, 2]
