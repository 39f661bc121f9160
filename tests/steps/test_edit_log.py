"""Each edit is logged through the ``ctxwin`` logger with structured ``extra`` fields."""

from __future__ import annotations

import json
import logging

import pytest

import ctxwin
from tests.builders import SMALL_POLICY, chat, coding_body, long_output

FIELDS = (
    "ctxwin_call_id",
    "ctxwin_tool",
    "ctxwin_step",
    "ctxwin_tokens_before",
    "ctxwin_tokens_after",
    "ctxwin_chars_before",
    "ctxwin_chars_after",
)


def edit_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "ctxwin" and hasattr(r, "ctxwin_step")]


def test_each_result_edit_is_logged_with_structured_fields(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = coding_body()
    caplog.set_level(logging.INFO, logger="ctxwin")
    report = ctxwin.load_policy(SMALL_POLICY).apply(body).report
    records = edit_records(caplog)
    assert len(report.edits) == 2
    assert len(records) == len(report.edits)
    texts = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    for edit, record in zip(report.edits, records, strict=True):
        assert record.levelno == logging.INFO
        assert {f: getattr(record, f) for f in FIELDS} == {
            "ctxwin_call_id": edit.call_id,
            "ctxwin_tool": edit.tool,
            "ctxwin_step": "cap",
            "ctxwin_tokens_before": edit.tokens_before,
            "ctxwin_tokens_after": edit.tokens_after,
            "ctxwin_chars_before": len(texts[edit.call_id]),
            "ctxwin_chars_after": edit.chars_after,
        }
        assert 0 < record.ctxwin_chars_after < record.ctxwin_chars_before
        assert record.getMessage().startswith(f"ctxwin cap {edit.tool} {edit.call_id}: ")


def test_an_edit_is_logged_once_not_on_every_request(caplog: pytest.LogCaptureFixture) -> None:
    """Edits of an earlier request of the same history (same message objects, as in an
    agent loop) are memoized and not logged again."""
    policy = ctxwin.load_policy(SMALL_POLICY)
    body = coding_body()
    caplog.set_level(logging.INFO, logger="ctxwin")
    policy.apply(body)
    first = len(edit_records(caplog))
    user = {"role": "user", "content": "Thanks. Now run the tests again."}
    later = policy.apply({**body, "messages": [*body["messages"], user]})
    assert len(later.report.edits) == first == 2
    assert len(edit_records(caplog)) == first


def test_window_edits_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    body = chat([[("bash", long_output(20, f"t{k}"))] for k in range(40)])
    policy = ctxwin.load_policy({"context_window": 3000, "tools": {"*": {"max_tokens": 60}}})
    caplog.set_level(logging.INFO, logger="ctxwin")
    report = policy.apply(body).report
    window = [e for e in report.edits if e.step == "window"]
    assert window
    logged = [r for r in edit_records(caplog) if r.ctxwin_step == "window"]
    assert len(logged) == len(window)


def test_a_summarizer_that_fails_is_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    """A wrong API key capped every long result with nothing under default logging; logged
    at WARNING with each edit, it was said again at every request of a server that parses
    each body afresh. Now: once, as the cap is memoized; the edits at INFO."""

    def unauthorized(text: str, **kw: object) -> str:
        raise PermissionError("401: invalid api key")

    rule = {"summarize": {"over_tokens": 30, "max_tokens": 24}}
    policy = ctxwin.load_policy(
        {"context_window": 100_000, "tools": {"*": rule}}, summarizer=unauthorized
    )
    caplog.set_level(logging.INFO, logger="ctxwin")
    for turn in range(3):  # a fresh body each time, as a server gets it
        rounds = [[("bash", long_output(20, "t"))]] + [[("bash", "ok")]] * (turn + 1)
        report = policy.apply(json.loads(json.dumps(chat(rounds)))).report
        assert [e.fallback for e in report.edits] == [
            "summarizer_error: PermissionError: 401: invalid api key"
        ]
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warned] == [
        "ctxwin summarize bash call_1 failed, capped instead for good: summarizer_error: "
        "PermissionError: 401: invalid api key"
    ]
    assert all(r.levelno == logging.INFO for r in edit_records(caplog))
