"""cap on JSON: whole items kept, the notice inside, and the output still parses."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.steps import _jsoncut
from ctxwin.steps._jsoncut import JSON_CUT_NOTE
from ctxwin.testing import FakeCounter, FakeSummarizer, agent_body
from ctxwin.tokens import TiktokenCounter
from tests.steps.conftest import body_with_result, result_text
from tests.strategies import TEXT

COUNTER = TiktokenCounter("o200k_base")
MODES = ["head", "tail", "head_tail"]
NOTICE = "tokens of get_order output truncated ...]"


def matches(n: int = 80) -> list[dict[str, Any]]:
    return [
        {
            "path": f"src/pkg{i % 7}/module_{i}.py",
            "line": i * 13 + 1,
            "text": f"def handler_{i}(request): return render(request, '東京 {i}')",
            "score": round(1 - i / 100, 2),
        }
        for i in range(n)
    ]


def cap(
    content: str, max_tokens: int, mode: str = "head_tail", *, words: bool = False, **rules: Any
) -> Any:
    """(Result, capped text) of one get_order result under a cap (counted in words with
    ``words``: a counter that cannot encode)."""
    pol = _policy(json.dumps({"max_tokens": max_tokens, "truncate": mode, **rules}), words)
    result = pol.apply(body_with_result(content))
    return result, result_text(result)


@cache
def _policy(rules: str, words: bool) -> ctxwin.Policy:
    counter = FakeCounter() if words else None
    return ctxwin.Policy({"tools": {"*": json.loads(rules)}}, counter=counter, format="openai-chat")


# ------------------------------------------------------------------ the measured case


@pytest.mark.parametrize("mode", MODES)
def test_search_code_selected_then_capped_stays_json(mode: str) -> None:
    """80 matches, select then cap, through a loaded policy on an OpenAI Chat body."""
    raw = json.dumps({"total": 80, "matches": matches()}, indent=2)
    body = agent_body([[("search_code", {"q": "handler"}, raw)], [("noop", {}, "ok")]])
    policy = ctxwin.load_policy(
        {
            "tools": {
                "search_code": {
                    "select": "matches[].{path: path, line: line, text: text}",
                    "max_tokens": 300,
                    "truncate": mode,
                }
            }
        }
    )
    result = policy.apply(body)
    text = result.request["messages"][3]["content"]  # type: ignore[index]
    items = json.loads(text)
    assert COUNTER.count(text) <= 300
    notices = [item for item in items if list(item) == ["..."]]
    assert len(notices) == 1
    assert notices[0]["..."].endswith(" tokens of search_code output truncated ...]")
    kept = [item for item in items if item not in notices]
    assert 3 <= len(kept) < 80
    assert all(set(item) == {"path", "line", "text"} for item in kept)
    assert "\n" not in text  # the selection is compact JSON: so is its cut
    assert ctxwin.check(result.request) == []
    select, capped = result.report.edits
    assert (select.step, capped.step, capped.note) == ("select", "cap", JSON_CUT_NOTE)
    assert capped.tokens_after == COUNTER.count(text)


def test_head_keeps_the_first_items_in_order() -> None:
    _, text = cap(json.dumps(matches()), 200, "head")
    *kept, notice = json.loads(text)
    assert kept == matches()[: len(kept)]
    assert list(notice) == ["..."]
    assert notice["..."].endswith(NOTICE)


def test_tail_keeps_the_last_items() -> None:
    _, text = cap(json.dumps(matches()), 200, "tail")
    notice, *kept = json.loads(text)
    assert kept == matches()[-len(kept) :]
    assert list(notice) == ["..."]


def test_head_tail_keeps_both_ends_around_the_notice() -> None:
    _, text = cap(json.dumps(matches()), 300, "head_tail")
    items = json.loads(text)
    at = items.index(next(i for i in items if list(i) == ["..."]))
    assert items[:at] == matches()[:at]
    tail = items[at + 1 :]
    assert tail == matches()[-len(tail) :]
    assert at >= 1
    assert len(tail) >= 1


def test_the_notice_gets_every_field_the_template_names() -> None:
    notice = "<{kept_tokens}/{total_tokens}, {omitted_tokens} gone, {tool} {call_id}>"
    content = json.dumps(matches())
    _, text = cap(content, 200, "head", notice=notice)
    said = json.loads(text)[-1]["..."]
    kept, rest = said[1:].split("/", 1)
    total = COUNTER.count(content)
    assert rest == f"{total}, {total - int(kept)} gone, get_order c1>"


# ------------------------------------------------------------------ objects and style


def test_an_object_records_the_cut_in_a_member_of_its_own() -> None:
    content = json.dumps({f"key_{i}": f"value number {i} 東京" for i in range(200)})
    _, text = cap(content, 120, "head")
    value = json.loads(text)
    *kept, last = value
    assert last == "..."
    assert value["..."].endswith(NOTICE)
    assert kept == [f"key_{i}" for i in range(len(kept))]


def test_the_notice_key_never_overwrites_a_member() -> None:
    content = json.dumps({"...": "mine", **{f"k{i}": "v " * 20 for i in range(40)}})
    _, text = cap(content, 100, "head")
    value = json.loads(text)
    assert value["..."] == "mine"
    assert value["...."].endswith(NOTICE)


def test_the_largest_member_is_cut_inside_and_the_others_kept() -> None:
    content = json.dumps({"query": "handler", "matches": matches(), "total": 80})
    _, text = cap(content, 250, "head")
    value = json.loads(text)
    assert list(value) == ["query", "matches", "total"]
    assert (value["query"], value["total"]) == ("handler", 80)
    *kept, notice = value["matches"]
    assert kept == matches()[: len(kept)]
    assert kept
    assert notice["..."].endswith(NOTICE)


def test_a_long_string_member_is_cut_as_text_inside_the_string() -> None:
    lines = "\n".join(f'line {i}: print("東京 {i}")' for i in range(400))
    content = json.dumps({"path": "src/app.py", "content": lines})
    for mode in MODES:
        _, text = cap(content, 80, mode)
        value = json.loads(text)
        assert value["path"] == "src/app.py"
        assert NOTICE in value["content"]
        assert COUNTER.count(text) <= 80
    assert value["content"].startswith("line 0: ")  # head_tail
    assert value["content"].endswith('line 399: print("東京 399")')


def test_indented_json_stays_indented_like_the_original() -> None:
    _, text = cap(json.dumps(matches(), indent=4, ensure_ascii=False), 250, "head")
    assert text.startswith('[\n    {\n        "path": ')
    assert "東京" in text
    assert json.loads(text)[0] == matches()[0]


def test_one_line_json_with_spaces_keeps_its_spaces() -> None:
    _, text = cap(json.dumps(matches()), 200, "head")
    assert "\n" not in text
    assert text.startswith('[{"path": "src/pkg0/module_0.py", "line": 1, ')


def test_compact_json_stays_compact() -> None:
    content = json.dumps(matches(), separators=(",", ":"), ensure_ascii=False)
    _, text = cap(content, 200, "head")
    assert text.startswith('[{"path":"src/pkg0/module_0.py","line":1,')
    assert ", " not in text.replace("(request, '", "")


@pytest.mark.parametrize("indent", [None, 2])
def test_the_notice_alone_stands_for_items_none_of_which_fit(indent: int | None) -> None:
    """Written on one line when even the notice alone does not fit indented."""
    content = json.dumps([12345678901234567890 + i for i in range(100)], indent=indent)
    _, text = cap(content, 24, "head")
    (notice,) = json.loads(text)
    assert list(notice) == ["..."]
    assert notice["..."].endswith(NOTICE)
    spaced = json.dumps([notice])
    assert text == (spaced if indent is None else json.dumps([notice], separators=(",", ":")))
    assert COUNTER.count(text) <= 24


# ------------------------------------------------------------------ a JSON string

ESCAPED = "".join(f'line {i}: say "hi" \\ tab\there, é 東京 🙂\n' for i in range(300))
"""A string whose JSON holds every kind of escape: quotes, backslashes, tabs, newlines and
(written ASCII-only) \\uXXXX and surrogate pairs."""


@pytest.mark.parametrize("mode", MODES)
def test_a_json_string_is_cut_inside_and_stays_a_json_string(mode: str) -> None:
    """The notice goes inside the string, as in a string member: the result still parses."""
    content = json.dumps("word " * 500)
    result, text = cap(content, 60, mode)
    value = json.loads(text)
    assert isinstance(value, str)
    assert NOTICE in value
    assert COUNTER.count(text) <= 60
    head, rest = value.split("[... ", 1)
    tail = rest.split(NOTICE, 1)[1]
    assert ("word " * 500).startswith(head.removesuffix("\n"))
    assert ("word " * 500).endswith(tail.removeprefix("\n"))
    assert bool(head) == (mode != "tail")
    assert bool(tail) == (mode != "head")
    (edit,) = result.report.edits
    assert edit.note == JSON_CUT_NOTE
    assert edit.tokens_after == COUNTER.count(text)


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_json_string_is_cut_between_characters_never_inside_an_escape(
    mode: str, ascii_only: bool
) -> None:
    content = json.dumps(ESCAPED, ensure_ascii=ascii_only)
    _, text = cap(content, 80, mode)
    value = json.loads(text)
    assert COUNTER.count(text) <= 80
    head, rest = value.split("[... ", 1)
    tail = rest.split(NOTICE, 1)[1]
    assert ESCAPED.startswith(head.removesuffix("\n"))
    assert ESCAPED.endswith(tail.removeprefix("\n"))
    assert len(head) > 20 if mode != "tail" else head == ""
    assert len(tail) > 20 if mode != "head" else tail == ""


@pytest.mark.parametrize("mode", MODES)
def test_the_notice_alone_stands_for_a_json_string_none_of_which_fits(mode: str) -> None:
    """A notice of 22 tokens under a cap of 24: the string becomes the notice, in quotes."""
    said = "tokens of the {tool} output of call {call_id} cut here by the cap ...]"
    notice = "[... {omitted_tokens} of {total_tokens} " + said
    _, text = cap(json.dumps("word " * 500), 24, mode, notice=notice)
    assert json.loads(text) == "[... 502 of 502 " + said.format(tool="get_order", call_id="c1")
    assert COUNTER.count(text) <= 24


# ------------------------------------------------------------------ what is cut as text


@pytest.mark.parametrize(
    "content",
    [
        "results: " + json.dumps(matches()),  # text around JSON
        "[" + json.dumps(matches())[1:-1],  # broken JSON
        "[" * 150 + json.dumps(" ".join(f"w{i}" for i in range(500))) + "]" * 150,  # deep
        "[" * 100_000 + "]" * 100_000,  # deeper than the parser goes
    ],
    ids=["prose", "broken", "deep", "too-deep"],
)
def test_what_is_not_a_json_container_is_cut_as_text(content: str) -> None:
    result, text = cap(content, 60, "head")
    assert text.endswith(NOTICE)
    assert content.startswith(text.rsplit("\n", 1)[0])
    (edit,) = result.report.edits
    assert edit.note is None


def test_a_result_over_2m_characters_is_cut_as_text_its_total_counted() -> None:
    content = json.dumps(matches(18_000))
    assert len(content) > 2_000_000
    result, text = cap(content, 100, "head")
    assert content.startswith(text.rsplit("\n", 1)[0])
    (edit,) = result.report.edits
    assert (edit.note, edit.tokens_before) == (None, COUNTER.count(content))


def test_the_summarize_fallback_cuts_json_on_structure_too() -> None:
    pol = ctxwin.Policy(
        {"tools": {"*": {"summarize": {"over_tokens": 100, "max_tokens": 150}}}},
        summarizer=FakeSummarizer(behaviour="raise"),
        format="openai-chat",
    )
    result = pol.apply(body_with_result(json.dumps(matches())))
    text = result_text(result)
    assert json.loads(text)[0] == matches()[0]
    (edit,) = result.report.edits
    assert (edit.step, edit.note) == ("summarize", JSON_CUT_NOTE)
    assert edit.fallback is not None
    assert edit.fallback.startswith("summarizer_error")


# ------------------------------------------------------------------ properties

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
    st.text(alphabet=st.sampled_from(list('ab 東\n"\\')), max_size=300),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(TEXT, inner, max_size=8),
    max_leaves=60,
)
CONTAINERS = st.lists(VALUES, min_size=1, max_size=30) | st.dictionaries(
    TEXT, VALUES, min_size=1, max_size=20
)
STYLES: list[dict[str, Any]] = [
    {"separators": (",", ":")},
    {},
    {"indent": 2},
    {"indent": 4},
]


@settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    value=CONTAINERS,
    style=st.sampled_from(STYLES),
    limit=st.integers(24, 400),
    mode=st.sampled_from(MODES),
    words=st.booleans(),
)
def test_capped_json_parses_and_fits(
    value: Any, style: dict[str, Any], limit: int, mode: str, words: bool
) -> None:
    """In tokens, and in words (a counter that cannot encode, cut by search)."""
    count = FakeCounter().count if words else COUNTER.count
    content = json.dumps(value, ensure_ascii=False, **style)
    result, text = cap(content, limit, mode, words=words)
    if count(content) <= limit:
        assert text == content
        assert result.report.edits == ()
        return
    json.loads(text)
    assert count(text) <= limit
    assert "[..." in text  # what was left out is said: the notice, or its short form
    (edit,) = result.report.edits
    assert edit.note == JSON_CUT_NOTE
    assert edit.tokens_after == count(text)


def test_leaving_the_other_items_out_of_a_cut_inside_the_edge_item_is_said() -> None:
    """No whole item fitting with the notice, the cut went into the first item, which fit
    whole without it: the other two went without a word, ``[[[], {"a": null}, null]]``
    (found by the fixed-point property of test_select_says_nothing)."""
    value = [[[], {"a": None}, None], None, {"a": None, "b": None, "z": None, "items": None}]
    result, text = cap(json.dumps(value), 30)
    assert text == '[{"...": "[... 25 of 31 tokens of get_order output truncated ...]"}]'
    (edit,) = result.report.edits
    assert (edit.tokens_before, edit.tokens_after) == (31, 21)


@settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    value=st.builds(
        str.__mul__,
        TEXT | st.text(alphabet=st.sampled_from(list('ab \n\t"\\/東é🙂\x00\x1f')), min_size=1),
        st.integers(1, 100),
    ),
    ascii_only=st.booleans(),
    limit=st.integers(24, 200),
    mode=st.sampled_from(MODES),
    words=st.booleans(),
)
def test_a_capped_json_string_parses_and_fits(
    value: str, ascii_only: bool, limit: int, mode: str, words: bool
) -> None:
    """Escapes, control characters and non-ASCII, written as is or ASCII-only."""
    count = FakeCounter().count if words else COUNTER.count
    content = json.dumps(value, ensure_ascii=ascii_only)
    result, text = cap(content, limit, mode, words=words)
    if count(content) <= limit:
        assert text == content
        return
    assert isinstance(json.loads(text), str)
    assert count(text) <= limit
    (edit,) = result.report.edits
    assert edit.note == JSON_CUT_NOTE


# ------------------------------------------------------------------ work


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(list(range(20_000))),
        json.dumps([f"id-{i}" for i in range(20_000)], separators=(",", ":")),
        json.dumps({f"k{i}": i for i in range(20_000)}, indent=2),
        json.dumps({"total": 3, "rows": [[i, i + 1] for i in range(20_000)]}),
    ],
    ids=["numbers", "strings", "object", "dominant"],
)
def test_capping_20k_items_on_structure_writes_json_far_fewer_times_than_items(
    content: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking for the item that holds most of the value wrote each item with a dumps of its
    own: 20,000 encodes here, 2 s of CPU for a 1.8 MB array of numbers (review s48-5)."""
    encode = json.JSONEncoder.encode
    calls = 0

    def counted(self: json.JSONEncoder, o: Any) -> str:
        nonlocal calls
        calls += 1
        return encode(self, o)

    monkeypatch.setattr(json.JSONEncoder, "encode", counted)
    result, _ = cap(content, 200)
    assert result.report.edits[0].note == JSON_CUT_NOTE
    assert calls < 1_000


def _dominant_item_by_item(value: Any, style: Any) -> int | None:
    """The item holding most of ``value`` as it was found before: each one written alone."""
    items = list(value.values()) if isinstance(value, dict) else value
    sizes = [len(style.dumps(v)) for v in items]
    big = max(range(len(items)), key=sizes.__getitem__)
    hollow = _jsoncut._hollow(items[big]) is not None
    return big if sizes[big] * 2 > sum(sizes) and hollow else None


LONE = st.sampled_from(["\ud83d", "a\udc00b", "\t\n", ""])


@settings(max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "150")), deadline=None)
@given(
    value=st.lists(VALUES | LONE, min_size=1, max_size=30)
    | st.dictionaries(TEXT | LONE, VALUES | LONE, min_size=1, max_size=20),
    indent=st.sampled_from([None, " ", "  ", "    ", "\t"]),
    spaced=st.booleans(),
)
def test_the_item_holding_most_is_the_one_found_writing_each_item_alone(
    value: Any, indent: str | None, spaced: bool
) -> None:
    """Measured in blocks, the same item as measured one by one: caps stay byte for byte."""
    item_sep = ", " if spaced and indent is None else ","
    style = _jsoncut._Style(indent, item_sep, ": " if spaced or indent else ":")
    items = list(value.values()) if isinstance(value, dict) else value
    assert _jsoncut._span(items, style) == sum(len(style.dumps(v)) for v in items)
    assert _jsoncut._dominant(value, style) == _dominant_item_by_item(value, style)
