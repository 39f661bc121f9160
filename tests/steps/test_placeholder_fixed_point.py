"""A result that already reads as one of the policy's placeholders for its tool is never
cleared again. It was: with ``o200k_base`` the count in ``(1200 tokens)`` is one token more
than in ``(20 tokens)``, so clearing the placeholder "saved" a token, and applying the policy
to its own output (a request still over the window, or a history an integration sends back
as the policy left it) rewrote the placeholder: ``apply(apply(x)) != apply(x)``, and the
prefix the provider cached broke there."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.testing import agent_body

PLACEHOLDER = "[read result cleared to save context (1200 tokens). Call read again if you need it.]"
WINDOW = {"strategy": "threshold", "keep_rounds": 1}


def _words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def _policy(**extra: Any) -> ctxwin.Policy:
    config: dict[str, Any] = {"context_window": 4000, "tokenizer": "o200k_base", "window": WINDOW}
    config.update(extra)
    return ctxwin.load_policy(config)


def _texts(result: ctxwin.Result) -> list[str]:
    return [r.text for m in result.conversation.messages for r in m.tool_results]


def test_a_request_still_over_the_window_is_a_fixed_point() -> None:
    """The newest round alone is over the window, and the old cleared round cannot be
    dropped (Anthropic thinking opens the current turn there)."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig"},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": _words(600)}],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "read"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c2", "content": _words(900)}],
            },
        ],
    }
    policy = _policy(context_window=1000)
    once = policy.apply(body, format="anthropic")
    assert once.report.over_budget
    assert "(1200 tokens)" in _texts(once)[0]
    twice = policy.apply(once.request, format="anthropic")
    assert twice.request == once.request
    assert not twice.report.edits


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
def test_a_placeholder_sent_back_stays_as_it_was(fmt: ctxwin.FormatName) -> None:
    """An integration sends the history back as the policy left it: the window clears the
    newer result, not the placeholder again."""
    rounds = [
        [("read", {}, PLACEHOLDER)],
        [("read", {}, _words(1200))],
        [("read", {}, "ok")],
    ]
    result = _policy().apply(agent_body(rounds, format=fmt), format=fmt)
    first, second, _ = _texts(result)
    assert first == PLACEHOLDER
    assert second.startswith("[read result cleared to save context (")
    assert [e.call_id for e in result.report.edits] == ["call_2"]


def test_a_placeholder_naming_its_call_stays_and_one_naming_another_does_not() -> None:
    """A template with ``{call_id}``: a result is the policy's placeholder only for its own
    call."""
    template = "[{call_id}: {tool} output cleared, {tokens} tokens; call {tool} again]"
    own = "[call_1: read output cleared, 1200 tokens; call read again]"
    other = "[call_7: read output cleared, 1200 tokens; call read again]"
    policy = _policy(window={**WINDOW, "placeholder": template})
    for text, kept in ((own, True), (other, False)):
        rounds = [[("read", {}, text)], [("read", {}, _words(1200))], [("read", {}, "ok")]]
        result = policy.apply(agent_body(rounds), format="openai-chat")
        assert (_texts(result)[0] == text) is kept


def test_a_tools_own_placeholder_is_recognised() -> None:
    template = "[{tool}: {tokens} tokens gone]"
    policy = _policy(tools={"read": {"placeholder": template}})
    rounds = [[("read", {}, "[read: 1200 tokens gone]")], [("read", {}, _words(1200))]]
    result = policy.apply(agent_body([*rounds, [("read", {}, "ok")]]), format="openai-chat")
    assert _texts(result)[:2] == ["[read: 1200 tokens gone]", "[read: 2600 tokens gone]"]


def test_a_recall_placeholder_sent_back_stays_as_it_was() -> None:
    """With recall, clearing a placeholder again also kept the placeholder in the store and
    quoted its handle in place of the original's."""
    sent = '[read result cleared (3600 tokens). recall("r-4e07408562bedb8b") returns it.]'
    rounds = [[("read", {}, sent)], [("read", {}, _words(1200))], [("read", {}, "ok")]]
    result = _policy(recall=True).apply(agent_body(rounds), format="openai-chat")
    first, second, _ = _texts(result)
    assert first == sent
    assert second.startswith("[read result cleared (")
    assert 'recall("r-' in second


CONTAINERS = {
    "openai-chat": "messages",
    "anthropic": "messages",
    "openai-responses": "input",
    "gemini": "contents",
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(ctxwin.FORMATS),
    sizes=st.lists(st.integers(1, 1500), min_size=1, max_size=5),
    latest=st.integers(1, 1500),
    new=st.integers(1, 1500),
)
def test_what_the_window_cleared_stays_as_it_was(
    fmt: ctxwin.FormatName, sizes: list[int], latest: int, new: int
) -> None:
    """Counted exactly (a count's digits are tokens): the policy's output read again is
    itself, and sent back with the agent's next round keeps every placeholder as it was
    (the next jump clears newer results, not the placeholders again)."""
    rounds = [[("read", {}, _words(n, f"t{i}-"))] for i, n in enumerate([*sizes, latest])]
    policy = _policy(context_window=8000, window={**WINDOW, "trigger": 0.5, "target": 0.3})
    once = policy.apply(agent_body(rounds, format=fmt), format=fmt)
    assert policy.apply(once.request, format=fmt).request == once.request
    key = CONTAINERS[fmt]
    sent = agent_body(rounds, format=fmt)[key]
    more = agent_body([*rounds, [("read", {}, _words(new, "n"))]], format=fmt)[key][len(sent) :]
    twice = policy.apply({**once.request, key: [*once.request[key], *more]}, format=fmt)
    cleared = {i: t for i, t in enumerate(_texts(once)) if t.startswith("[read result cleared")}
    assert {i: _texts(twice)[i] for i in cleared} == cleared
