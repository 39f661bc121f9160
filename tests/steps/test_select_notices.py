"""What select takes for ctxwin's own notices: only where ctxwin writes them."""

from __future__ import annotations

import json

import pytest

import ctxwin
from ctxwin.steps._selected import _template_re, is_marked, json_marked
from ctxwin.testing import FakeCounter, agent_body

SELECT = "items[].{number: number, title: title}"


def _issues(body_of_7: str) -> str:
    items = [
        {"number": i, "title": f"issue {i}", "body": (body_of_7 if i == 7 else "") + "steps " * 20}
        for i in range(30)
    ]
    return json.dumps({"total_count": 30, "items": items})


def test_a_raw_result_quoting_a_notice_is_still_selected() -> None:
    """An issue body with a pasted agent log quoting ctxwin's short notice made the whole
    list read as ctxwin's own output: passed whole, unnoted (review of 08c38d6)."""
    text = _issues("Agent log:\n  read_file -> [... 1200 of 3400 tokens cut ...]\n")
    pol = ctxwin.Policy({"tools": {"search_issues": {"select": SELECT}}}, format="openai-chat")
    out = pol.apply(agent_body([[("search_issues", {"q": "bug"}, text)], [("noop", {}, "ok")]]))
    sent = out.request["messages"][3]["content"]  # type: ignore[index]
    assert json.loads(sent)[7] == {"number": 7, "title": "issue 7"}
    assert [e.step for e in out.report.edits] == ["select"]


def test_notices_count_where_a_cut_writes_them() -> None:
    notices = ("[... {omitted_tokens} of {total_tokens} tokens cut ...]",)
    cut = {"log": "head\n[... 5 of 9 tokens cut ...]\ntail", "n": 1}
    member = {"items": [1, {"...": "[... 5 of 9 tokens cut ...]"}]}
    quoted = {"log": "said: [... 5 of 9 tokens cut ...] then"}
    for data, marked in ((cut, True), (member, True), (quoted, False)):
        assert json_marked(json.dumps(data), data, notices, "t", "c") is marked, data


def test_templates_read_the_calls_own_tool_and_id_and_a_handle_as_one() -> None:
    """A template starting with {tool} was ``(?P<tool>.*?)``, tried from every position of
    a long string: 20 s for 83 kB. Every field but a free-text one is bounded now."""
    template = "{tool} output of {call_id} cut: {omitted_tokens} tokens, see {handle}"
    compiled = _template_re(template, "grep.x", "call_1")
    assert compiled is not None
    assert ".*?" not in compiled.pattern
    assert ".+?" not in compiled.pattern
    text = "x" * 50_000 + "grep.x output of call_1 cut: 12 tokens, see r-0a1b"
    assert is_marked(text, (), (template,), "grep.x", "call_1")
    assert not is_marked(text, (), (template,), "grep", "call_1")  # another tool's
    assert not is_marked(text.replace("r-0a1b", "later"), (), (template,), "grep.x", "call_1")


@pytest.mark.parametrize(
    ("extra", "tool_extra"),
    [
        ({"recall": True}, {}),  # the notice and the recall note on one line
        ({}, {"notice": "[{omitted_tokens} tokens cut]\nread a narrower range"}),  # two lines
        ({}, {}),
    ],
)
def test_a_json_result_cut_inside_a_string_passes_select_again_unnoted(
    extra: dict[str, object], tool_extra: dict[str, object]
) -> None:
    """With recall on, or a notice over two lines, the re-apply noted "selection matched
    nothing" on the policy's own output (review of 8f22f12)."""
    lines = "\n".join(f"line {i} of the file" for i in range(400))
    raw = json.dumps({"path": "a.py", "content": lines})
    rules = {"select": "matches[].path", "max_tokens": 120, **tool_extra}
    pol = ctxwin.Policy({**extra, "tools": {"read_file": rules}}, counter=FakeCounter())
    once = pol.apply(agent_body([[("read_file", {"path": "a.py"}, raw)], [("noop", {}, "ok")]]))
    twice = pol.apply(once.request)
    assert twice.request == once.request
    assert twice.report.edits == ()


def test_a_notice_or_placeholder_without_text_of_its_own_is_refused() -> None:
    """``notice: ""`` made every text with a newline read as ctxwin's own output: select
    never applied (review of 1f0103f); then marked nothing, so a summarize pass took its own
    capped output for a new result and summarized it again, and select noted a
    ``{"...": ""}`` cut as matching nothing on every pass (review of 198689f). A template
    that is only fields (``"{omitted_tokens}"``) did the same: refused at load, by key."""
    for rules, key in (
        ({"select": "files[].path", "notice": ""}, "notice"),
        ({"max_tokens": 100, "notice": "{omitted_tokens}"}, "notice"),
        ({"placeholder": " "}, "placeholder"),
    ):
        with pytest.raises(ctxwin.PolicyError, match="no text of its own") as e:
            ctxwin.Policy({"tools": {"ls": rules}}, counter=FakeCounter())
        assert e.value.key == f"tools.ls.{key}"
    with pytest.raises(ctxwin.PolicyError, match="no text of its own") as e:
        ctxwin.Policy({"window": {"placeholder": "{tokens}"}}, counter=FakeCounter())
    assert e.value.key == "window.placeholder"
