"""The HTML pages as a user's traces make them: names that are markup, no traces, one
request without tools, 5,000 requests, tools whose results count no token."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ctxwin import Policy
from ctxwin._report.data import ReplayResult, ReplayStats, RequestFigures
from ctxwin._report.html import MAX_BARS, replay_html, report_html
from ctxwin._report.summary import MAX_ROUNDS, biggest_rounds
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter, agent_body
from tests._report.test_html import _Tags

EVIL = ["<script>alert(1)</script>", "&amp;", "nul\x00and\x1bescape", 'quote"d']


class _Text(HTMLParser):
    """The text of a page and the values of its attributes, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.data: list[str] = []
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.values.extend(v for _, v in attrs if v is not None)

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def _well_formed(page: str) -> _Tags:
    tags = _Tags()
    tags.feed(page)
    tags.close()
    assert tags.open == []
    names = [t for t, _ in tags.seen]
    assert "script" not in names
    assert "img" not in names
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\")", page)  # self-contained
    assert not any(k.startswith("on") for _, a in tags.seen for k in a)
    return tags


def _policy() -> Policy:
    return Policy({"context_window": 600, "pricing": "openai"}, counter=FakeCounter())


def test_names_from_the_trace_are_text_on_the_page_never_markup() -> None:
    """Tool and trace names are escaped; control characters (not allowed in HTML) are shown
    as \\xNN."""
    body = agent_body([[(name, {}, "w " * 60)] for name in EVIL], task="go")
    result = replay(body, _policy(), name="<img src=x onerror=alert(1)>.json", optimum=True)
    report = _policy().apply(body).report
    for page in (replay_html([result]), report_html(report, title="<b>&amp;</b>")):
        _well_formed(page)
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", page)
        text = _Text()
        text.feed(page)
        words = " ".join(text.data + text.values)
        assert "<script>alert(1)</script>" in words
        assert "&amp;" in words  # the name itself, not an ampersand
        assert "nul\\x00and\\x1bescape" in words
        assert 'quote"d' in words
    assert "&lt;img src=x onerror=alert(1)&gt;.json" in replay_html([result])


def _long(n: int) -> ReplayResult:
    detail = tuple(
        RequestFigures(
            (1000 + 10 * i, 900 + 10 * i), (800 + i, 700 + i), (700 + i, 650), i % 50 == 0
        )
        for i in range(n)
    )
    stats = ReplayStats(n, 10, 5, 3, 0)
    return ReplayResult(
        "long.json", "openai-chat", stats, stats, "o200k_base", True, optimum=stats,
        requests_detail=detail, context_window=60_000,
    )  # fmt: skip


def test_a_trace_of_5000_requests_draws_at_most_max_bars_per_chart() -> None:
    """One bar per request made 30,000 sub-pixel bars and a 3.9 MB page."""
    page = replay_html([_long(5000)])
    tags = _well_formed(page)
    bars = [a for t, a in tags.seen if t == "rect" and a.get("class") in {"cached", "uncached"}]
    assert 0 < len(bars) <= 2 * 3 * MAX_BARS
    assert len(page) < 600_000
    assert "each bar the largest of 13 requests" in page
    # the last run ends on the last request, and its largest request is drawn
    assert "requests 4992-4999, largest 4999: " in page
    jumps = [a for t, a in tags.seen if t == "path" and a.get("class") == "jump"]
    assert len(jumps) == 100  # every jump (one in 50 requests) is in a run of its own


def test_a_short_trace_draws_one_bar_per_request() -> None:
    tags = _well_formed(replay_html([_long(MAX_BARS)]))
    bars = [a for t, a in tags.seen if t == "rect" and a.get("class") == "cached"]
    assert len(bars) == 3 * MAX_BARS


def test_no_traces_is_a_page_saying_so() -> None:
    """It showed an empty price line and a table of headers only."""
    page = replay_html([])
    tags = _well_formed(page)
    assert "No traces." in page
    assert "table" not in [t for t, _ in tags.seen]


def test_a_request_without_tools_says_so_instead_of_empty_charts() -> None:
    body = agent_body([], task="hello")
    report = _policy().apply(body).report
    page = report_html(report, title="one.json")
    tags = _well_formed(page)
    assert "svg" not in [t for t, _ in tags.seen]
    assert "No tool calls" in page


def test_one_edit_is_one_edit() -> None:
    body = agent_body([[("read", {}, "w " * 900)]], task="go")
    policy = Policy({"context_window": 6000, "tools": {"*": {"max_tokens": 100}}})
    report = policy.apply(body).report
    assert len(report.edits) == 1
    assert "; 1 edit;" in report_html(report)


def test_tools_whose_results_count_no_token_are_drawn_as_zero() -> None:
    body = agent_body([[("empty", {}, "")], [("empty", {}, "")], [("read", {}, "w " * 40)]])
    result = replay(body, _policy(), name="t.json")
    page = replay_html([result])
    tags = _well_formed(page)
    widths = [
        float(a["width"] or 0)
        for t, a in tags.seen
        if t == "rect" and a.get("class") in {"before", "after"}
    ]
    assert min(widths) == 0
    assert all(w >= 0 for w in widths)
    report_page = report_html(_policy().apply(body).report)
    _well_formed(report_page)
    assert "empty" in report_page


def test_a_request_of_many_rounds_draws_its_biggest_max_rounds() -> None:
    """Every round was drawn, 26 px each: 5,000 rounds made a 2 MB page and an SVG 130,036
    px tall; the text report lists the biggest MAX_ROUNDS (review s49-5, finding 3)."""
    sizes = [20 + (i * 37) % 300 for i in range(400)]
    body = agent_body([[("read", {"i": i}, "w " * n)] for i, n in enumerate(sizes)])
    report = Policy({"context_window": 200_000}, counter=FakeCounter()).apply(body).report
    assert len(report.rounds) == 400
    page = report_html(report, title="big.json")
    tags = _well_formed(page)
    before = [a for t, a in tags.seen if t == "rect" and a.get("class") == "before"]
    assert len(before) == len(report.tools) + MAX_ROUNDS
    assert f"per round: {MAX_ROUNDS} of 400 rounds, the biggest" in page
    drawn = {int(m) for m in re.findall(r"<title>round (\d+) \(read\) \w+: [\d,]+ before", page)}
    assert drawn == {r.index for r in biggest_rounds(report, MAX_ROUNDS)}
    heights = [int(a["height"] or 0) for t, a in tags.seen if t == "svg"]
    assert max(heights) < 400


def test_a_request_of_few_rounds_draws_every_round_in_order() -> None:
    body = agent_body([[("read", {"i": i}, "w " * (10 + i))] for i in range(3)])
    report = Policy({"context_window": 6000}, counter=FakeCounter()).apply(body).report
    page = report_html(report)
    drawn = re.findall(r"<title>(round \d+) \(read\) \w+: [\d,]+ before", page)
    assert drawn == ["round 0", "round 1", "round 2"]
    assert "per round</text>" in page
