"""A recall answer over its cap is paged by lines: its notice says which lines it shows and
the range to ask for next, never the call that made it (which answers the same page)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import ctxwin
from ctxwin._core.model import FORMATS, ToolResult
from ctxwin.steps._handles import handle_of
from ctxwin.testing import agent_body

CAP = 1000
BIG = "".join(f"line {i}: " + "word " * 10 + "\n" for i in range(1, 1001))
NOTICE = re.compile(r"\[recall: [^\n]*\](\n|\Z)")
NEXT = re.compile(r'Next: recall\("(r-[0-9a-f]{16})", lines="([0-9-]+)"\)( with the same grep)?')

Rounds = list[list[tuple[str, dict[str, Any], str]]]


def policy(**tools: Any) -> ctxwin.Policy:
    return ctxwin.load_policy(
        {
            "context_window": 200_000,
            "recall": {"enabled": True, "max_tokens": CAP},
            "tools": {"read_file": {"max_tokens": 500}, **tools},
        }
    )


def lines(first: int, last: int, text: str = BIG) -> str:
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


def read(p: ctxwin.Policy, text: str = BIG, fmt: str = "openai-chat") -> Rounds:
    """The history after a read capped by the policy (its original kept for recall)."""
    rounds: Rounds = [[("read_file", {"path": "big.txt"}, text)]]
    p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    return rounds


def recalled(
    p: ctxwin.Policy, rounds: Rounds, args: dict[str, Any], fmt: str = "openai-chat"
) -> str:
    """The answer to a recall call with ``args`` as the next request sends it."""
    rounds.append([("recall", args, p.recall_call(args).text)])
    out = p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    assert ctxwin.check(out.request, fmt) == []
    sent = [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert p.counter.count(sent[-1].text) <= CAP
    return sent[-1].text


def test_a_capped_recall_names_the_lines_it_shows_and_the_next_range() -> None:
    """The reviewer's loop: the notice said recall("<the same handle>") returns the whole
    result, and that call answered the same capped text every time."""
    p = policy()
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h})
    shown = re.search(r"\[recall: lines 1-(\d+) of 1000 shown", page)
    assert shown, page[-200:]
    n = int(shown.group(1))
    assert page.startswith(lines(1, n))  # whole lines, exactly as in the original
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, f"{n + 1}-1000")
    assert "returns the whole" not in page


@pytest.mark.parametrize("fmt", FORMATS)
def test_following_the_notices_gives_every_line_of_the_original_once(fmt: str) -> None:
    p = policy()
    rounds = read(p, fmt=fmt)
    args: dict[str, Any] = {"handle": handle_of(BIG)}
    asked, pages = [args], []
    for _ in range(40):
        page = recalled(p, rounds, args, fmt)
        pages.append(NOTICE.sub("", page, count=1))
        nxt = NEXT.search(page)
        if nxt is None:
            break
        args = {"handle": nxt.group(1), "lines": nxt.group(2)}
        assert args not in asked, "the notice sends the agent back to a call it made"
        asked.append(args)
    assert len(pages) > 5
    assert "".join(pages) == BIG


def test_an_answer_to_a_range_is_numbered_as_in_the_original() -> None:
    p = policy()
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h, "lines": "101-1000"})
    shown = re.search(r"\[recall: lines 101-(\d+) of 101-1000 shown", page)
    assert shown, page[-200:]
    n = int(shown.group(1))
    assert page.startswith(lines(101, n))
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, f"{n + 1}-1000")


def test_a_grep_answer_names_the_line_to_go_on_from() -> None:
    p = policy()
    h = handle_of(BIG)
    rounds = read(p)
    grep = r"line \d*7:"
    page = recalled(p, rounds, {"handle": h, "grep": grep})
    shown = re.search(r"\[recall: (\d+) of 100 matching lines shown, up to line (\d+)", page)
    assert shown, page[-200:]
    upto = int(shown.group(2))
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.groups() == (h, f"{upto + 1}-", " with the same grep")
    rest = recalled(p, rounds, {"handle": h, "lines": nxt.group(2), "grep": grep})
    assert NOTICE.sub("", page) + rest == p.recall(h, grep=grep).text


def test_a_head_and_tail_page_names_the_lines_between() -> None:
    p = policy(recall={"max_tokens": CAP, "truncate": "head_tail"})
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h})
    shown = re.search(r"\[recall: lines 1-(\d+) and (\d+)-1000 of 1000 shown", page)
    assert shown, page[:300]
    a, b = int(shown.group(1)), int(shown.group(2))
    notice = NOTICE.search(page)
    assert notice is not None
    assert page == lines(1, a) + notice.group(0) + lines(b, 1000)
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.group(2) == f"{a + 1}-{b - 1}"


def test_a_line_over_the_cap_is_shown_in_part_and_the_next_range_starts_after_it() -> None:
    long_line = "x" * 40_000 + "\n"
    text = long_line + "short line\n"
    p = policy()
    h = handle_of(text)
    page = recalled(p, read(p, text), {"handle": h})
    assert page.startswith("x" * 1000)
    assert "[recall: line 1 of 2 shown in part" in page
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, "2")


def test_the_page_is_the_cap_edit_and_is_left_alone_when_sent_again() -> None:
    p = policy()
    rounds = read(p)
    page = recalled(p, rounds, {"handle": handle_of(BIG)})
    out = p.apply(agent_body(rounds))
    (edit,) = [e for e in out.report.edits if e.tool == "recall"]
    assert (edit.step, edit.note) == ("cap", "paged by lines")
    assert edit.tokens_after == p.counter.count(page) <= CAP
    rounds[-1] = [("recall", {"handle": handle_of(BIG)}, page)]  # a history that kept the page
    again = p.apply(agent_body(rounds))
    assert not [e for e in again.report.edits if e.tool == "recall"]
