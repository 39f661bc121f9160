"""Rendering reports and replays: text tables that fit 100 columns, Markdown, versioned JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import ctxwin
from ctxwin._report.as_json import reports_json
from ctxwin._report.markdown import reports_markdown
from ctxwin._report.replay import replay_json, replay_markdown, replay_text
from ctxwin._report.text import reports_text
from ctxwin.replay import ReplayResult, replay
from tests.builders import SMALL_POLICY, chat, coding_body, long_output


@pytest.fixture(scope="module")
def policy() -> ctxwin.Policy:
    return ctxwin.load_policy(SMALL_POLICY)


@pytest.fixture(scope="module")
def report(policy: ctxwin.Policy) -> ctxwin.Report:
    return policy.apply(coding_body()).report


@pytest.fixture(scope="module")
def long_report() -> ctxwin.Report:
    """40 rounds of bash: 40 caps and the window clearing the oldest results."""
    body = chat([[("bash", long_output(20, f"t{k}"))] for k in range(40)])
    pol = ctxwin.load_policy({"context_window": 3000, "tools": {"*": {"max_tokens": 60}}})
    return pol.apply(body).report


def fits(text: str, width: int = 100) -> bool:
    return all(len(line) <= width for line in text.splitlines())


def table_row(text: str, first_cell: str) -> list[str]:
    """The cells of the text-table row starting with ``first_cell``."""
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in\n{text}")


# ------------------------------------------------------------------------------ text


def test_text_summary_names_format_counter_tokens_window_and_budget(report: ctxwin.Report) -> None:
    text = report.to_text()
    assert text.startswith("ctxwin report\n")
    assert "openai-chat" in text
    assert "o200k_base (exact)" in text
    assert f"{report.tokens_before:,} -> {report.tokens_after:,}" in text
    assert f"{report.saved:,} ({report.saved / report.tokens_before:.1%})" in text
    assert f"4,000 ({report.tokens_after / 4000:.1%} used)" in text
    assert f"{report.messages_before} -> {report.messages_after}" in text
    assert re.search(r"window events\s+0", text)
    assert re.search(r"over budget\s+no", text)


def test_text_tool_table_has_calls_before_after_saved_share(report: ctxwin.Report) -> None:
    bash = next(t for t in report.tools if t.tool == "bash")
    row = table_row(report.to_text(), "bash")
    assert row == [
        "bash",
        "2",
        f"{bash.tokens_before:,}",
        f"{bash.tokens_after:,}",
        f"{bash.saved:,}",
        f"{bash.share:.1%}",
    ]
    assert table_row(report.to_text(), "all tools")[1] == "3"


def test_text_lists_each_edit_with_call_id_tool_step_and_tokens(report: ctxwin.Report) -> None:
    text = report.to_text()
    for edit in report.edits:
        row = table_row(text, edit.call_id or "-")
        assert row[1:3] == [edit.tool, edit.step]
        assert row[4:7] == [f"{edit.tokens_before:,}", f"{edit.tokens_after:,}", f"{edit.saved:,}"]
        assert row[7] == "-"  # no fallback


def test_text_rounds_summary_counts_states(report: ctxwin.Report) -> None:
    assert "rounds: 2 (1 kept, 1 edited, 0 dropped), biggest first:" in report.to_text()


def test_text_collapses_long_edit_lists_to_the_biggest(long_report: ctxwin.Report) -> None:
    text = long_report.to_text(max_edits=5)
    edits = long_report.edits
    assert len(edits) > 5
    rest = sorted(edits, key=lambda e: -e.saved)[5:]
    assert f"edits: {len(edits)}, {sum(e.saved for e in edits):,} tokens saved; " in text
    assert f"... and {len(rest)} more edits ({sum(e.saved for e in rest):,} tokens saved)" in text
    listed = [line for line in text.splitlines() if line.startswith("call_")]
    assert len(listed) == 5


def test_text_shows_window_events_and_the_biggest_rounds(long_report: ctxwin.Report) -> None:
    text = long_report.to_text()
    assert long_report.window_events > 0
    assert re.search(rf"window events\s+{long_report.window_events}\b", text)
    assert "; the biggest:" in text
    assert "window" in {e.step for e in long_report.edits}


@pytest.mark.parametrize("width", [100, 80, 60])
def test_text_fits_the_width_even_with_long_names(width: int) -> None:
    long_tool = "mcp__a_very_long_server_name__and_an_even_longer_tool_name_for_reading_files"
    body = chat([[(long_tool, long_output(100)), ("bash", long_output(50))]])
    body["messages"][2]["tool_calls"][0]["id"] = "call_" + "x" * 70
    body["messages"][3]["tool_call_id"] = "call_" + "x" * 70
    report = ctxwin.load_policy(SMALL_POLICY).apply(body).report
    text = report.to_text(width)
    assert fits(text, width)
    assert "..." in text  # the long names were cut, not the numbers
    assert f"{report.tokens_before:,}" in text


def test_text_says_estimate_for_an_approximate_counter() -> None:
    pol = ctxwin.load_policy({**SMALL_POLICY, "tokenizer": "approx"})
    text = pol.apply(coding_body()).report.to_text()
    assert "(estimate)" in text


def test_text_flags_over_budget() -> None:
    pol = ctxwin.load_policy({"context_window": 200, "overflow": "error"})
    with pytest.raises(ctxwin.BudgetExceeded) as info:
        pol.apply(coding_body())
    assert re.search(r"over budget\s+YES", info.value.report.to_text())


def test_text_lists_pairing_fixes(policy: ctxwin.Policy) -> None:
    body = chat([[("bash", "ok"), ("bash", "ok too")]], missing=["call_2"])
    report = policy.apply(body).report
    text = report.to_text()
    assert "pairing fixes: 1" in text
    assert "messages[2].tool_calls[1]: added_missing_result [call_2]:" in text
    assert fits(text)


def test_text_without_edits_has_no_edit_table(policy: ctxwin.Policy) -> None:
    report = policy.apply(chat([[("bash", "short")]])).report
    text = report.to_text()
    assert "edits: " not in text
    assert re.search(r"edits\s+none", text)


# ------------------------------------------------------------------------------ markdown


def test_markdown_has_summary_and_tool_tables(report: ctxwin.Report) -> None:
    md = report.to_markdown()
    lines = md.splitlines()
    assert lines[0] == "### ctxwin report"
    assert lines[2].startswith("| format | counter | tokens | saved |")
    assert lines[3] == "|" + "---|" * 10
    assert "| openai-chat | o200k_base (exact) |" in lines[4]
    assert "| tool | calls | before | after | saved | share |" in lines
    assert "|---|---:|---:|---:|---:|---:|" in lines
    assert "#### Edits" in lines
    assert "| `call_1` | bash | cap |" in md


def test_markdown_escapes_pipes_in_cells() -> None:
    body = chat([[("grep|head", long_output(100))]])
    md = ctxwin.load_policy(SMALL_POLICY).apply(body).report.to_markdown()
    assert "| grep\\|head |" in md


def test_markdown_collapses_long_edit_lists(long_report: ctxwin.Report) -> None:
    md = long_report.to_markdown(max_edits=3)
    n_rest = len(long_report.edits) - 3
    assert f"_… and {n_rest} more edits (" in md
    assert md.count("| `call_") == 3


# ------------------------------------------------------------------------------ json


def test_json_round_trips_and_carries_version_1(report: ctxwin.Report) -> None:
    data = json.loads(report.to_json())
    assert data == report.to_dict()
    assert data["version"] == 1
    assert data["counter"] == {"name": "o200k_base", "exact": True}
    assert data["tokens"]["saved"] == report.saved
    assert [e["call_id"] for e in data["edits"]] == [e.call_id for e in report.edits]


def test_json_keeps_non_ascii_text(policy: ctxwin.Policy) -> None:
    text = policy.apply(chat([[("lire_fichier_été", long_output(100))]])).report.to_json()
    assert "lire_fichier_été" in text
    assert json.loads(text)["tools"][0]["tool"] == "lire_fichier_été"


def test_json_schema_is_documented() -> None:
    doc = ctxwin.Report.to_json.__doc__ or ""
    for key in ('"version"', '"tokens"', '"tools"', '"rounds"', '"edits"', '"fixes"', '"notes"'):
        assert key in doc


# ------------------------------------------------------------------------------ several reports


@pytest.fixture(scope="module")
def items(policy: ctxwin.Policy) -> list[tuple[str, ctxwin.Report]]:
    return [
        ("a.json", policy.apply(coding_body()).report),
        ("deep/folder/b.jsonl:3", policy.apply(chat([[("grep", long_output(80))]])).report),
    ]


def test_reports_text_has_a_row_per_file_and_a_total(
    items: list[tuple[str, ctxwin.Report]],
) -> None:
    text = reports_text(items)
    assert fits(text)
    a, b = (r for _, r in items)
    row = table_row(text, "a.json")
    assert row[1:6] == [
        "openai-chat",
        f"{a.messages_before}->{a.messages_after}",
        f"{a.tokens_before:,}",
        f"{a.tokens_after:,}",
        f"{a.saved:,}",
    ]
    total = table_row(text, "total (2)")
    assert total[2] == f"{a.tokens_before + b.tokens_before:,}"
    assert total[4] == f"{a.saved + b.saved:,}"
    assert table_row(text, "grep")[1] == "1"  # tools over all requests


def test_reports_text_cuts_long_file_names_at_the_start(policy: ctxwin.Policy) -> None:
    name = "/".join(["folder"] * 30) + "/requests.jsonl:12"
    report = policy.apply(coding_body()).report
    text = reports_text([(name, report), ("other.json", report)])
    assert fits(text)
    row = next(line for line in text.splitlines() if line.startswith("..."))
    assert row.split()[0].endswith("/folder/requests.jsonl:12")
    assert row.split()[1] == "openai-chat"


def test_reports_text_names_files_from_their_common_folder(policy: ctxwin.Policy) -> None:
    report = policy.apply(coding_body()).report
    text = reports_text([("runs/day1/a.json", report), ("runs/day2/b.jsonl:4", report)])
    assert "files in runs/\n" in text
    assert table_row(text, "day1/a.json")[1] == "openai-chat"
    assert table_row(text, "day2/b.jsonl:4")[1] == "openai-chat"


def test_reports_text_has_an_over_column_only_when_a_request_is_over(
    policy: ctxwin.Policy,
) -> None:
    report = policy.apply(coding_body()).report
    assert " over\n" not in reports_text([("a.json", report), ("b.json", report)])
    tight = ctxwin.load_policy({"context_window": 200, "overflow": "error"})
    with pytest.raises(ctxwin.BudgetExceeded) as info:
        tight.apply(coding_body())
    text = reports_text([("a.json", report), ("b.json", info.value.report)])
    assert table_row(text, "b.json")[-1] == "YES"
    assert table_row(text, "total (2)")[-1] == "1"


def test_reports_detail_appends_each_report(items: list[tuple[str, ctxwin.Report]]) -> None:
    text = reports_text(items, detail=True)
    assert "ctxwin report: a.json" in text
    assert "ctxwin report: deep/folder/b.jsonl:3" in text
    assert fits(text)


def test_reports_markdown_has_a_total_row(items: list[tuple[str, ctxwin.Report]]) -> None:
    md = reports_markdown(items)
    assert "| `a.json` | openai-chat |" in md
    assert "| **total (2)** |" in md


def test_reports_json_round_trips_with_totals(items: list[tuple[str, ctxwin.Report]]) -> None:
    data: dict[str, Any] = json.loads(reports_json(items))
    assert data["version"] == 1
    assert data["kind"] == "report"
    assert [r["name"] for r in data["requests"]] == ["a.json", "deep/folder/b.jsonl:3"]
    assert data["requests"][0]["report"] == items[0][1].to_dict()
    assert data["total"]["tokens"]["before"] == sum(r.tokens_before for _, r in items)
    assert data["total"]["edits"] == sum(len(r.edits) for _, r in items)
    assert {t["tool"] for t in data["total"]["tools"]} == {"bash", "read_file", "grep"}


# ------------------------------------------------------------------------------ replay


@pytest.fixture(scope="module")
def replays(policy: ctxwin.Policy) -> list[ReplayResult]:
    return [
        replay(coding_body(), policy, name="a.json"),
        replay(chat([[("grep", long_output(80))], [("bash", "ok")]]), policy, name="b.json"),
    ]


def test_replay_text_shows_unmanaged_managed_and_ratios(replays: list[ReplayResult]) -> None:
    text = replay_text(replays)
    assert fits(text)
    a = replays[0]
    assert table_row(text, "a.json")[1:4] == [
        "unmanaged",
        str(a.unmanaged.requests),
        f"{a.unmanaged.input_tokens:,}",
    ]
    ratios = [line for line in text.splitlines() if re.match(r"\s+ratio\s", line)]
    assert len(ratios) == 3  # two traces and the total
    assert f"{a.cost_ratio:.3f}x" in ratios[0]
    assert f"{a.peak_ratio:.3f}x" in ratios[0]


def test_replay_total_sums_and_takes_the_largest_peak(replays: list[ReplayResult]) -> None:
    text = replay_text(replays)
    total = table_row(text, "total (2 traces)")
    assert total[3] == f"{sum(r.unmanaged.input_tokens for r in replays):,}"
    assert total[6] == f"{max(r.unmanaged.peak for r in replays):,}"


def test_replay_json_round_trips_with_total(replays: list[ReplayResult]) -> None:
    data: dict[str, Any] = json.loads(replay_json(replays))
    assert data["version"] == 1
    assert data["kind"] == "replay"
    assert data["traces"] == [json.loads(json.dumps(r.to_dict())) for r in replays]
    total = data["total"]
    assert total["traces"] == 2
    assert total["managed"]["input_tokens"] == sum(r.managed.input_tokens for r in replays)
    u = sum(r.unmanaged.effective_cost for r in replays)
    m = sum(r.managed.effective_cost for r in replays)
    assert total["cost_ratio"] == pytest.approx(m / u, abs=1e-4)


def test_replay_markdown_has_a_row_per_trace_and_a_total(replays: list[ReplayResult]) -> None:
    md = replay_markdown(replays)
    a = replays[0]
    assert (
        f"| `a.json` | openai-chat | {a.managed.requests} | "
        f"{a.unmanaged.input_tokens:,} → {a.managed.input_tokens:,} |"
    ) in md
    assert "| **total (2)** |" in md


def test_replay_of_no_traces_renders() -> None:
    assert replay_text([]) == "ctxwin replay: no traces\n"
    assert json.loads(replay_json([]))["total"] is None


def test_replay_header_gives_the_prices_the_costs_were_computed_at(
    policy: ctxwin.Policy,
) -> None:
    """One formula when every trace has the same prices; each trace's when they differ (a
    GPT-4o trace reads its cache at half price, not at the Anthropic tenth)."""
    four_o = replay(coding_body(), policy, name="a.json", pricing="openai-4o")
    claude = [replay(coding_body(), policy, name=n, pricing="anthropic") for n in ("b", "c")]
    one = " ".join(replay_text([four_o]).split())
    assert "eff. cost = 1 x uncached + 0.5 x cached input tokens; ratio" in one
    both = " ".join(replay_text([four_o, *claude]).split())
    assert (
        "eff. cost = write x uncached + read x cached input tokens, at each trace's prices "
        "(write / read: 1 / 0.5 for a.json; 1.25 / 0.1 for 2 traces); ratio"
    ) in both
    md = replay_markdown([*claude])
    assert "eff. cost = 1.25 × uncached + 0.1 × cached input tokens; ratios" in md
    assert "1 × uncached + 0.5 × cached" in replay_markdown([four_o])
