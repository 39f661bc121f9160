"""ctxwin.testing: what users test their own code with works as documented."""

from __future__ import annotations

import pytest

import ctxwin
from ctxwin.testing import FakeCounter, agent_body, capture_edits

ROUNDS = [[("read_file", {"path": "a.py"}, "x " * 300)], [("grep", {}, "1"), ("ls", {}, "2")]]


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
def test_agent_body_writes_a_valid_request_in_each_format(fmt: ctxwin.FormatName) -> None:
    body = agent_body(ROUNDS, format=fmt, final="done")
    assert ctxwin.detect(body) == fmt
    assert ctxwin.check(body) == []
    conv = ctxwin.parse(body)
    assert [r.tool for r in conv.results()] == ["read_file", "grep", "ls"]


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
def test_agent_body_can_leave_a_result_out(fmt: ctxwin.FormatName) -> None:
    body = agent_body(ROUNDS, format=fmt, missing=["call_3"])
    (p,) = ctxwin.check(body)
    assert (p.code, p.call_id) == ("missing_result", "call_3")


def test_capture_edits_sees_the_edits_made_while_it_runs() -> None:
    pol = ctxwin.Policy({"tools": {"*": {"max_tokens": 30}}}, counter=FakeCounter())
    with capture_edits() as edits:
        pol.apply(agent_body(ROUNDS))
    assert [(e.step, e.tool) for e in edits] == [("cap", "read_file")]
    with capture_edits() as later:
        pass
    assert later == []
