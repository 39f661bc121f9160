"""Detection (no ``format=``) of a body with one bad message: the FormatError names the
element (``messages[3]``, ``input[2].role``, ``[1]`` in a bare list) and what is wrong
with it, as the adapters' own errors do; it never settles on another format."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin import FormatError
from ctxwin._cli import main

CHAT = {
    "model": "my-model",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "one file"},
        {"role": "user", "content": "thanks"},
    ],
}
ANTHROPIC = {
    "model": "my-model",
    "messages": [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
        },
        {"role": "assistant", "content": "one file"},
        {"role": "user", "content": "thanks"},
    ],
}
RESPONSES = {
    "model": "my-model",
    "input": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "looking"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"role": "assistant", "content": "one file"},
        {"role": "user", "content": "thanks"},
    ],
}
GEMINI = {
    "contents": [
        {"role": "user", "parts": [{"text": "list files"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
        {"role": "model", "parts": [{"text": "one file"}]},
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]
}
BODIES = {
    "openai-chat": ("messages", CHAT),
    "anthropic": ("messages", ANTHROPIC),
    "openai-responses": ("input", RESPONSES),
    "gemini": ("contents", GEMINI),
}


def spoiled(fmt: str, index: int, defect: str, bare: bool) -> tuple[object, str]:
    """The body of ``fmt`` (or its bare list) with one message spoiled, and the path of
    that message as an error names it."""
    key, body = BODIES[fmt]
    out: dict[str, Any] = copy.deepcopy(body)
    message = out[key][index]
    if defect == "no role":
        del message["role"]
    elif defect == "unknown role":
        message["role"] = "robot"
    else:
        message["role"] = 7
    return (out[key], f"[{index}]") if bare else (out, f"{key}[{index}]")


def role_indexes(fmt: str) -> list[int]:
    key, body = BODIES[fmt]
    return [i for i, m in enumerate(body[key]) if "role" in m]


CASES = [
    (fmt, i, defect, bare)
    for fmt in BODIES
    for i in role_indexes(fmt)
    for defect in ("no role", "unknown role", "a number for role")
    for bare in (False, True)
]


def test_the_bodies_are_detected_before_they_are_spoiled() -> None:
    for fmt, (key, body) in BODIES.items():
        assert ctxwin.detect(body) == fmt
        assert ctxwin.check(body) == []
        if fmt != "openai-chat":  # a bare list of chat messages could be anthropic's too
            assert ctxwin.detect(body[key]) == fmt


@pytest.mark.parametrize(("fmt", "index", "defect", "bare"), CASES)
def test_one_bad_message_is_named_and_never_read_as_another_format(
    fmt: str, index: int, defect: str, bare: bool
) -> None:
    body, at = spoiled(fmt, index, defect, bare)
    try:
        found = ctxwin.detect(body)
    except FormatError as e:
        error = e
    else:
        error = None
    if error is not None:
        assert error.path in (at, f"{at}.role"), str(error)
        return
    assert found == fmt  # detected: then its parser names the message
    if fmt == "gemini" and defect == "no role":
        ctxwin.check(body)  # Gemini's role is optional (a turn of the user's)
        return
    with pytest.raises(FormatError) as info:
        ctxwin.check(body)
    path = info.value.path or ""
    assert path.removeprefix(BODIES[fmt][0]).startswith(at.removeprefix(BODIES[fmt][0])), str(
        info.value
    )


def test_a_message_without_role_is_named() -> None:
    """It said "its 'messages' holds 6 items no format fully matches (the first item has
    keys ['content', 'role'])": not which one, nor what it lacks."""
    body, _ = spoiled("openai-chat", 3, "no role", bare=False)
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert info.value.path == "messages[3]"
    assert str(info.value) == (
        "messages[3]: cannot tell the wire format of this dict: the message has no 'role'"
    )


def test_an_unknown_role_is_named_among_the_roles_of_that_list() -> None:
    body, _ = spoiled("anthropic", 4, "unknown role", bare=False)
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert (info.value.path, info.value.reason) == (
        "messages[4].role",
        "cannot tell the wire format of this dict: unknown role 'robot' (known: assistant, "
        "developer, function, system, tool, user)",
    )


def test_a_bare_list_names_its_element_by_index() -> None:
    body, _ = spoiled("openai-responses", 4, "no role", bare=True)
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert (info.value.path, info.value.reason) == (
        "[4]",
        "cannot tell the wire format of this list: the message has no 'role' (nor the 'type' "
        "of a Responses item)",
    )


def test_a_role_of_another_format_is_named_with_what_that_format_says() -> None:
    """An OpenAI Chat tool message in an Anthropic history: every role is known to some
    format, so only where the formats stop taking the list tells the odd one."""
    body: dict[str, Any] = copy.deepcopy(ANTHROPIC)
    body["messages"] += copy.deepcopy(ANTHROPIC["messages"][:3])  # a second round
    body["messages"][7] = {"role": "tool", "tool_call_id": "t1", "content": "a.py"}
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert (info.value.path, info.value.reason) == (
        "messages[7].role",
        "cannot tell the wire format of this dict: the other messages fit anthropic, this "
        "one does not: unknown role 'tool' (expected one of user, assistant, system); pass "
        "format= to say which format it is",
    )


def test_when_two_formats_each_lack_one_message_both_are_said() -> None:
    """One Anthropic marker (a tool_use block) and one OpenAI Chat marker (a tool message):
    either is the odd one, as the body could be either format."""
    body: dict[str, Any] = copy.deepcopy(ANTHROPIC)
    body["messages"][2] = {"role": "tool", "tool_call_id": "t1", "content": "a.py"}
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert (info.value.path, info.value.reason) == (
        "messages[1].content[0]",
        "cannot tell the wire format of this dict: the other messages fit openai-chat, this "
        "one does not: an Anthropic call block ('tool_use'), which OpenAI Chat does not have "
        "(its calls are an assistant message's 'tool_calls', its results 'tool' messages) "
        "(or, as anthropic, messages[2] is the one that does not); pass format= to say which "
        "format it is",
    )


def test_a_role_no_format_of_a_bare_list_has_there_is_named() -> None:
    """``model`` is Gemini's role, but Gemini content holds ``parts``."""
    body: list[Any] = copy.deepcopy(CHAT["messages"])
    body[4] = {"role": "model", "content": "one file"}
    with pytest.raises(FormatError) as info:
        ctxwin.detect(body)
    assert info.value.path == "[4].role"
    assert info.value.reason.startswith(
        "cannot tell the wire format of this list: the other messages fit openai-chat, this "
        "one does not: unknown role 'model'"
    )


def test_the_command_line_names_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, _ = spoiled("openai-chat", 3, "no role", bare=False)
    path = tmp_path / "req.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"ctxwin: error: {path}: messages[3]: cannot tell the wire format of this JSON object: "
        "the message has no 'role'\n"
    )
