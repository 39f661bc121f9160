"""The HTML replay report: one self-contained file that a browser renders."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctxwin import Policy
from ctxwin._report.html import replay_html
from ctxwin.replay import ReplayResult, replay
from ctxwin.testing import FakeCounter, agent_body


def _trace() -> ReplayResult:
    body = agent_body([[("read", {}, " ".join(["w"] * 100))] for _ in range(40)], task="go")
    pol = Policy({"context_window": 1000, "pricing": "openai"}, counter=FakeCounter())
    return replay(body, pol, name="trace <1>", optimum=True)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.seen: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, dict(attrs)))
        if tag not in {"meta", "line", "rect", "path", "br"}:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in {"meta", "line", "rect", "path", "br"}:
            return
        assert self.open, f"</{tag}> closes nothing"
        assert self.open[-1] == tag, f"</{tag}> closes <{self.open[-1]}>"
        self.open.pop()


def test_the_page_is_well_formed_self_contained_and_draws_every_request() -> None:
    result = _trace()
    page = replay_html([result])
    tags = _Tags()
    tags.feed(page)
    tags.close()
    assert tags.open == []
    names = [t for t, _ in tags.seen]
    assert "script" not in names
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert names.count("svg") == 4  # unmanaged, policy, optimum, per tool
    requests = result.managed.requests
    bars = [a for t, a in tags.seen if t == "rect" and a.get("class") in {"cached", "uncached"}]
    assert len(bars) == 2 * 3 * requests  # cached and uncached, per request, per chart
    jumps = [a for t, a in tags.seen if t == "path" and a.get("class") == "jump"]
    assert len(jumps) == sum(f.jump for f in result.requests_detail) > 0
    assert sum(1 for t, a in tags.seen if t == "line" and a.get("class") == "window") == 3
    assert "trace &lt;1&gt;" in page  # names are escaped
    assert f"{result.optimum_ratio:.3f}x" in page


def test_each_tool_is_drawn_before_and_after_over_every_request() -> None:
    result = _trace()
    (read,) = result.tools
    assert (read.tool, read.calls) == ("read", 40)
    unmanaged = sum(f.unmanaged[0] for f in result.requests_detail)
    assert 0 < read.tokens_after < read.tokens_before < unmanaged
    tags = _Tags()
    tags.feed(replay_html([result]))
    before = [a for t, a in tags.seen if t == "rect" and a.get("class") == "before"]
    after = [a for t, a in tags.seen if t == "rect" and a.get("class") == "after"]
    assert len(before) == len(after) == 1
    assert float(after[0]["width"] or 0) < float(before[0]["width"] or 0)
    assert f"{read.tokens_before:,} → {read.tokens_after:,}" in replay_html([result])


def test_the_window_label_sits_right_of_every_bar() -> None:
    tags = _Tags()
    tags.feed(replay_html([_trace()]))
    ends = [
        float(a["x"] or 0) + float(a["width"] or 0)
        for t, a in tags.seen
        if t == "rect" and a.get("class") in {"cached", "uncached"}
    ]
    lines = [a for t, a in tags.seen if t == "line" and a.get("class") == "window"]
    labels = [a for t, a in tags.seen if t == "text" and a.get("class") == "window-label"]
    assert len(labels) == len(lines) == 3
    for line, label in zip(lines, labels, strict=True):
        assert float(label["x"] or 0) > max(ends)
        assert float(line["x2"] or 0) <= float(label["x"] or 0)


def test_long_trace_paths_are_shortened_and_the_table_may_scroll() -> None:
    one = _trace()
    deep = "/home/someone/projects/a-long-folder-of-traces/from-last-week/"
    results = [replace(one, name=deep + "first-trace.json"), replace(one, name=deep + "b.json")]
    page = replay_html(results)
    assert '<div class="scroll"><table><caption>traces in ' + deep in page
    assert f'<td class="name" title="{deep}first-trace.json">first-trace.json</td>' in page
    assert "overflow-x:auto" in page


class _Labels(HTMLParser):
    """The labels of the horizontal bar charts (text right-aligned left of the bars): their
    attributes, the text drawn (without their title) and their title."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.labels: list[tuple[dict[str, str | None], str, str]] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "text" and dict(attrs).get("text-anchor") == "end":
            self.labels.append((dict(attrs), "", ""))
            self._in = ["text"]
        elif self._in:
            self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in:
            attrs, text, title = self.labels[-1]
            if self._in[-1] == "title":
                self.labels[-1] = (attrs, text, title + data)
            else:
                self.labels[-1] = (attrs, text + data, title)


MONO_EM = 0.62
"""The advance of a monospace font's character, in em, at most (DejaVu Sans Mono, Menlo:
0.602; Consolas 0.55); a wide (East Asian) character takes two."""


def _drawn_width(text: str, font_size: float) -> float:
    import unicodedata

    cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return cells * MONO_EM * font_size


def test_bar_labels_fit_left_of_their_bars_and_keep_their_end() -> None:
    """Labels of up to 44 characters were right-aligned at x=212 in a proportional font:
    "round 1 (read_file, search_code) edited" began at x=-22.8, an MCP tool lost its prefix,
    and two tools sharing 44 characters read the same (review s49-5, finding 4)."""
    from ctxwin._report.html import report_html

    names = [
        "mcp__github__list_pull_requests",
        "mcp__filesystem__read_text_file",
        "bash",
        "mcp__a_server_with_a_long_name__" + "x" * 40 + "_first",
        "mcp__a_server_with_a_long_name__" + "x" * 40 + "_second",
        "工具" * 30,
        "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
    ]
    rounds = [[(names[i % len(names)], {"i": i}, "w " * 40)] for i in range(len(names) * 2)]
    rounds[0] = [(n, {"n": n}, "w " * 40) for n in names[:5]]
    body = agent_body(rounds, task="go")
    policy = Policy({"context_window": 100_000, "pricing": "openai"}, counter=FakeCounter())
    replayed = replay_html([replay(body, policy, name="t.json")])
    reported = report_html(policy.apply(body).report)
    for page in (replayed, reported):
        labels = _labels(page)
        assert len(labels) >= len(names)
        for attrs, text, title in labels:
            assert "monospace" in (attrs.get("font-family") or "")
            size = float(attrs["font-size"] or 0)
            assert 0 < _drawn_width(text, size) <= float(attrs["x"] or 0), text
            if "…" in text:  # shortened in the middle, the whole label in its title
                head, tail = text.split("…")
                assert title.startswith(head)
                assert title.endswith(tail)
                assert len(title) > len(text)
        full = [title or text for _, text, title in labels]
        for name in names:
            assert any(label.startswith(name) for label in full), name
        assert len({text for _, text, _ in labels}) == len(labels)  # told apart
    tools = [text for _, text, _ in _labels(replayed)]
    assert len(tools) == len(names)
    assert all(text.endswith(" calls)") for text in tools)
    assert "mcp__github__list_pull_requests (2 calls)" in tools
    [first] = [text for _, text, _ in _labels(reported) if text.startswith("round 0 (")]
    assert "…" in first
    assert first.rsplit(" ", 1)[1] in {"kept", "edited", "dropped"}


def _labels(page: str) -> list[tuple[dict[str, str | None], str, str]]:
    found = _Labels()
    found.feed(page)
    return found.labels


def test_the_cli_writes_the_html_report(tmp_path: Path) -> None:
    from ctxwin._cli import main

    body = tmp_path / "t.json"
    import json

    body.write_text(json.dumps(agent_body([[("read", {}, "x " * 300)] for _ in range(8)])))
    (tmp_path / "p.yaml").write_text("context_window: 1000\n", encoding="utf-8")
    out = tmp_path / "r.html"
    assert (
        main(
            [
                "replay",
                str(body),
                "-p",
                str(tmp_path / "p.yaml"),
                "--optimum",
                "--html",
                str(out),
                "-o",
                str(tmp_path / "t"),
            ]
        )
        == 0
    )
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.browser
def test_headless_chromium_renders_the_page(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed")
    page = tmp_path / "replay.html"
    page.write_text(replay_html([_trace()]), encoding="utf-8")
    shot = tmp_path / "replay.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,900",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # A blank 1000x900 page compresses to a few kB; charts and text make it far larger.
    assert len(data) > 20_000


def test_one_requests_report_draws_each_tool_and_round_before_and_after(tmp_path: Path) -> None:
    from ctxwin._report.html import report_html
    from ctxwin._report.summary import MAX_ROUNDS

    body = agent_body([[("read", {}, " ".join(["w"] * 300))] for _ in range(12)], task="go")
    report = Policy({"context_window": 1500}, counter=FakeCounter()).apply(body).report
    page = report_html(report, title="req.json")
    tags = _Tags()
    tags.feed(page)
    tags.close()
    assert tags.open == []
    before = [a for t, a in tags.seen if t == "rect" and a.get("class") == "before"]
    after = [a for t, a in tags.seen if t == "rect" and a.get("class") == "after"]
    drawn = min(len(report.rounds), MAX_ROUNDS)  # the biggest rounds
    assert len(before) == len(after) == len(report.tools) + drawn
    assert f"{report.tokens_before:,} → {report.tokens_after:,} tokens" in page
    assert "cleared" in page or "edited" in page  # old rounds are marked as edited
