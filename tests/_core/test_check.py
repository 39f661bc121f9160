"""Checking on the neutral model: what a format's rules reject, named by a describer."""

from __future__ import annotations

from ctxwin._core.check import find, has_errors, problems_of
from ctxwin._core.model import Message, Text
from tests._core.neutral import (
    ADJACENT,
    ANYWHERE,
    GROUPED,
    Describer,
    calls,
    conv,
    result,
    results,
    user,
)


def codes(c: object) -> list[str]:
    return [f.code for f in find(c, warnings=False).found]  # type: ignore[arg-type]


def test_a_valid_conversation_has_no_problem() -> None:
    c = conv(ADJACENT, user("go"), calls("a", "b"), results("a"), results("b"))
    assert problems_of(c, Describer()) == []
    assert not has_errors(c)


def test_the_same_messages_are_valid_under_one_format_and_not_another() -> None:
    """A user message between a call and its result: Responses accepts it, Chat does not."""
    msgs = (user("go"), calls("a"), user("wait"), results("a"))
    assert codes(conv(ANYWHERE, *msgs)) == []
    assert codes(conv(ADJACENT, *msgs)) == ["misplaced_result"]


def test_missing_results_are_found_with_their_call_id() -> None:
    c = conv(ADJACENT, user("go"), calls("a", "b"), results("a"))
    (p,) = problems_of(c, Describer())
    assert (p.code, p.call_id, p.path, p.message) == (
        "missing_result",
        "b",
        "m1.b1",
        "missing_result b",
    )
    assert has_errors(c)


def test_results_must_come_first_where_the_rules_say_so() -> None:
    carrier = Message("user", (Text("and also"), result("a")))
    assert codes(conv(GROUPED, user("go"), calls("a"), carrier)) == ["results_not_first"]


def test_an_empty_result_is_only_a_warning() -> None:
    empty = Message("tool", (result("a", ""),))
    c = conv(ADJACENT, user("go"), calls("a"), empty)
    assert problems_of(c, Describer()) == []
    (p,) = problems_of(c, Describer(), warnings=True)
    assert (p.code, p.severity, p.tool) == ("empty_result", "warning", "tool_a")
