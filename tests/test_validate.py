"""parse, render, check, repair on request bodies: what a provider would reject, only."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxwin
from tests.builders import asst, call, tool, user
from tests.conftest import CHAINED_WITHOUT_ID, corpus_params, load


@pytest.mark.corpora
@pytest.mark.parametrize("path", corpus_params())
def test_every_request_a_provider_accepted_checks_clean(path: Path) -> None:
    """``check`` answers one question: would the provider reject this? (Real traces have
    results with empty content, which providers accept.)"""
    body = load(path)
    if path.stem in CHAINED_WITHOUT_ID:
        assert isinstance(body, dict)
        body = {**body, "previous_response_id": "resp_recorded"}
    assert ctxwin.check(body) == []


def test_warnings_are_asked_for() -> None:
    body = {"messages": [user("go"), asst(call("a", "f")), tool("a", "")]}
    assert ctxwin.check(body) == []
    (p,) = ctxwin.check(body, warnings=True)
    assert (p.code, p.severity, p.path) == ("empty_result", "warning", "messages[2]")


def test_repair_leaves_a_valid_body_as_it_is() -> None:
    body = {"messages": [user("go"), asst(call("a", "f")), tool("a", "ok")]}
    assert ctxwin.repair(body) == (body, [])


@pytest.mark.parametrize(
    ("body", "fmt", "container"),
    [
        ({"messages": []}, "openai-chat", "messages"),
        ({"system": "be brief", "messages": []}, "anthropic", "messages"),
        ({"input": []}, "openai-responses", "input"),
        ({"contents": []}, "gemini", "contents"),
    ],
)
def test_check_finds_a_request_with_nothing_to_send(body: dict, fmt: str, container: str) -> None:
    """Every provider refuses an empty message list: check says so, like apply."""
    (p,) = ctxwin.check(body, format=fmt)
    assert (p.code, p.severity, p.path, p.message_index) == (
        "empty_request",
        "error",
        container,
        None,
    )
    assert str(p) == f"{container}: empty_request: the request has no messages: nothing to send"


def test_repair_refuses_to_leave_nothing_to_send() -> None:
    """An orphan result alone repairs to no message at all: an InputError, as apply raises,
    never an empty request returned quietly."""
    body = {"messages": [tool("z", "x")]}
    with pytest.raises(
        ctxwin.InputError,
        match=r"^messages: nothing is left after repair: the only message was a result ",
    ):
        ctxwin.repair(body, format="openai-chat")
    with pytest.raises(ctxwin.InputError, match=r"^messages: the request has no messages"):
        ctxwin.repair({"messages": []}, format="openai-chat")
    assert body == {"messages": [tool("z", "x")]}


def test_nothing_left_counts_the_messages_with_separators() -> None:
    body = {"messages": [tool(f"z{i}", "x") for i in range(1200)]}
    with pytest.raises(
        ctxwin.InputError, match=r"^messages: nothing is left after repair: all 1,200 "
    ):
        ctxwin.repair(body, format="openai-chat")


@pytest.mark.parametrize(
    ("body", "path", "hint"),
    [
        ({"messages": None}, None, "its 'messages' must be a list, not null"),
        ({"messages": {"role": "user"}}, None, "its 'messages' must be a list, not object"),
        (
            {"messages": [{"role": "robot", "content": "beep"}]},
            "messages[0].role",
            "unknown role 'robot' (known: assistant, developer, function, system, tool, user)",
        ),
    ],
)
def test_an_undetected_body_says_what_is_off(body: dict, path: str | None, hint: str) -> None:
    with pytest.raises(ctxwin.FormatError) as info:
        ctxwin.check(body)
    assert (info.value.path, info.value.reason) == (
        path,
        f"cannot tell the wire format of this dict: {hint}",
    )


CHAINED_INPUT = [
    {"role": "user", "content": "and the tests?"},
    {"type": "function_call_output", "call_id": "call_prev", "output": "3 failed"},
]
"""A Responses input whose call lives in the server's stored conversation, which the body
does not name (the Agents SDK's sessions send such inputs)."""


def test_check_takes_server_state_from_the_caller() -> None:
    (p,) = ctxwin.check(CHAINED_INPUT, format="openai-responses")
    assert (p.code, p.call_id) == ("orphan_result", "call_prev")
    assert ctxwin.check(CHAINED_INPUT, format="openai-responses", server_state=True) == []


def test_server_state_false_overrides_what_the_body_says() -> None:
    body = {"previous_response_id": "resp_1", "input": CHAINED_INPUT}
    assert ctxwin.check(body) == []
    (p,) = ctxwin.check(body, server_state=False)
    assert p.code == "orphan_result"


def test_repair_keeps_a_result_whose_call_lives_on_the_server() -> None:
    assert ctxwin.repair(CHAINED_INPUT, "openai-responses", server_state=True) == (
        CHAINED_INPUT,
        [],
    )
    fixed, (fix,) = ctxwin.repair(CHAINED_INPUT, "openai-responses")
    assert fixed == CHAINED_INPUT[:1]
    assert fix.call_id == "call_prev"


@pytest.mark.parametrize("how", ["check", "repair"])
def test_a_server_state_that_is_not_a_bool_is_refused(how: str) -> None:
    """``"no"`` is truthy: it read as True and kept an orphan, as apply refuses it."""
    with pytest.raises(ctxwin.InputError) as info:
        getattr(ctxwin, how)(CHAINED_INPUT, "openai-responses", server_state="no")
    assert str(info.value) == "server_state: server_state= takes True, False or None, not str"
