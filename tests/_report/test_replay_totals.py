"""The total of a replay over several traces: what every rendering says it sums."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import ctxwin
from ctxwin._report.html import replay_html
from ctxwin._report.replay import replay_json, replay_markdown, replay_text
from ctxwin.replay import ReplayResult, ReplayStats, replay
from tests.builders import SMALL_POLICY, coding_body


@pytest.fixture(scope="module")
def priced_apart() -> list[ReplayResult]:
    """The same trace twice, once on GPT-4o's cache prices, once on Anthropic's."""
    policy = ctxwin.load_policy(SMALL_POLICY)
    return [
        replay(coding_body(), policy, name="gpt.json", pricing="openai-4o", optimum=True),
        replay(coding_body(), policy, name="claude.json", pricing="anthropic", optimum=True),
    ]


def test_a_sum_of_stats_priced_apart_costs_what_they_cost() -> None:
    """Each trace at its own prices: the sum was priced at the first one's."""
    a = ReplayStats(2, 1000, 800, 600, 0, write_price=1.0, read_price=0.5)
    b = ReplayStats(3, 2000, 1500, 900, 0, write_price=1.25, read_price=0.1)
    total = a + b
    assert total.effective_cost == pytest.approx(a.effective_cost + b.effective_cost)
    assert (total.input_tokens, total.cached_tokens, total.peak) == (3000, 2300, 900)
    assert (total + a).effective_cost == pytest.approx(2 * a.effective_cost + b.effective_cost)
    same = ReplayStats(1, 100, 50, 100, 0) + ReplayStats(1, 300, 100, 300, 0)
    assert same.cost is None
    assert same.effective_cost == pytest.approx(1.25 * 250 + 0.1 * 150)


def test_the_total_cost_of_traces_priced_apart_is_the_sum_of_theirs(
    priced_apart: list[ReplayResult],
) -> None:
    managed = sum(r.managed.effective_cost for r in priced_apart)
    unmanaged = sum(r.unmanaged.effective_cost for r in priced_apart)
    total: dict[str, Any] = json.loads(replay_json(priced_apart))["total"]
    assert total["managed"]["effective_cost"] == round(managed, 1)
    assert total["unmanaged"]["effective_cost"] == round(unmanaged, 1)
    assert total["cost_ratio"] == round(managed / unmanaged, 4)
    lines = replay_text(priced_apart).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("total (2 traces)"))
    assert re.split(r"\s{2,}", lines[at])[5] == f"{unmanaged:,.1f}"
    assert re.split(r"\s{2,}", lines[at + 1].strip())[4] == f"{managed:,.1f}"
    md = replay_markdown(priced_apart)
    assert f"**{unmanaged:,.1f} → {managed:,.1f}**" in md


def test_the_json_total_has_the_optimum_the_text_total_shows(
    priced_apart: list[ReplayResult],
) -> None:
    text = replay_text(priced_apart)
    x_optimum = [line.split()[-1] for line in text.splitlines() if "x optimum" in line]
    total: dict[str, Any] = json.loads(replay_json(priced_apart))["total"]
    optimum = sum(r.optimum.effective_cost for r in priced_apart if r.optimum is not None)
    assert total["optimum"]["effective_cost"] == round(optimum, 1)
    assert total["optimum"]["requests"] == sum(r.managed.requests for r in priced_apart)
    assert f"{total['optimum_ratio']:.3f}x" == x_optimum[-1]
    plain = [replace_optimum(r) for r in priced_apart]
    without: dict[str, Any] = json.loads(replay_json(plain))["total"]
    assert without["optimum"] is None
    assert without["optimum_ratio"] is None


def replace_optimum(r: ReplayResult) -> ReplayResult:
    from dataclasses import replace

    return replace(r, optimum=None)


def test_the_html_page_gives_each_trace_its_own_prices(
    priced_apart: list[ReplayResult],
) -> None:
    """The header gave the first trace's prices as everyone's."""
    page = re.sub(r"\s+", " ", replay_html(priced_apart))
    assert "1.25 / 0.1 for claude.json" in page
    assert "1 / 0.5 for gpt.json" in page


def test_markdown_gives_the_optimum_ratio_the_text_and_json_give(
    priced_apart: list[ReplayResult],
) -> None:
    """The text and JSON said × optimum per trace and in total; Markdown left it out."""
    md = replay_markdown(priced_apart)
    header = next(line for line in md.splitlines() if line.startswith("| trace |"))
    assert header.endswith("| × optimum |")
    data: dict[str, Any] = json.loads(replay_json(priced_apart))
    for trace in data["traces"]:
        row = next(line for line in md.splitlines() if f"`{trace['trace']}`" in line)
        assert row.endswith(f"| {trace['optimum_ratio']:.3f}x |")
    assert md.rstrip().splitlines()[-1].endswith(f"| **{data['total']['optimum_ratio']:.3f}x** |")
    plain = replay_markdown([replace_optimum(r) for r in priced_apart])
    assert "optimum" not in plain


def test_the_html_page_has_the_total_every_rendering_has(
    priced_apart: list[ReplayResult],
) -> None:
    """The README: the total is given "in every rendering"; the page listed the traces only."""
    from html.parser import HTMLParser

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "tr":
                self.rows.append([])

        def handle_data(self, data: str) -> None:
            if self.rows and data.strip():
                self.rows[-1].append(data.strip())

    parser = Rows()
    parser.feed(replay_html(priced_apart))
    total = next(r for r in parser.rows if r and r[0] == "total (2 traces)")
    data: dict[str, Any] = json.loads(replay_json(priced_apart))["total"]
    assert f"{data['cost_ratio']:.3f}x" in total
    assert f"{data['optimum_ratio']:.3f}x" in total
    assert f"{data['managed']['peak']:,}" in total
