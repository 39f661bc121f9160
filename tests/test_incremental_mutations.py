"""In-place edits a fresh parse would read differently are seen; snapshots never walk out of
the user's data; a full memo stays fast."""

from __future__ import annotations

import copy
import enum
import gc
import json
from typing import Any

import pytest
from pydantic import BaseModel

import ctxwin
import ctxwin._core.snapshot as snapshot_module
from ctxwin._core.memo import Memo
from ctxwin.testing import agent_body

POLICY = {"context_window": 3000, "tools": {"*": {"max_tokens": 60}}}


class _Referents:
    """``gc`` for the snapshot module, failing once a snapshot walks far more objects than
    the test's data holds (the code before the fix walked the whole interpreter)."""

    def __init__(self) -> None:
        self.seen = 0

    def get_referents(self, *objs: object) -> list[object]:
        out = gc.get_referents(*objs)
        self.seen += len(out)
        if self.seen > 5_000_000:
            raise AssertionError("the snapshot walked out of the message's data")
        return out


@pytest.fixture
def bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_module, "gc", _Referents())


def outcome(policy: ctxwin.Policy, body: object) -> object:
    try:
        result = policy.apply(body)
    except ctxwin.CtxwinError as e:
        return f"{type(e).__name__}: {e}"
    return json.dumps([result.request, result.report.to_dict()], sort_keys=True, default=repr)


def fresh(body: object) -> object:
    return outcome(ctxwin.Policy(POLICY), copy.deepcopy(body))


def test_is_error_set_in_place_to_an_equal_number_is_seen() -> None:
    """``True`` and ``1`` are equal: compared by equality, the change went unseen and the
    memo's parse (a valid flag) was used where a fresh apply refuses the request."""
    body = agent_body([[("t0", {"p": 1}, "a " * 50)], [("t1", {}, "b")]], format="anthropic")
    block = body["messages"][2]["content"][0]
    policy = ctxwin.Policy(POLICY)
    block["is_error"] = True
    assert outcome(policy, body) == fresh(body)
    block["is_error"] = 1
    assert "must be true or false" in str(fresh(body))
    assert outcome(policy, body) == fresh(body)


@pytest.mark.parametrize(("old", "new"), [(1, 1.0), (1, True), (0.0, -0.0)])
def test_a_number_replaced_in_place_by_an_equal_one_gives_what_a_fresh_copy_gives(
    old: object, new: object
) -> None:
    body = agent_body([[("t0", {"p": 1}, "x")], [("t1", {}, "y")]], format="gemini")
    response = body["contents"][2]["parts"][0]["functionResponse"]["response"]
    response["n"] = old
    policy = ctxwin.Policy(POLICY)
    assert outcome(policy, body) == fresh(body)
    response["n"] = new
    assert outcome(policy, body) == fresh(body)


class _Payload(dict[str, Any]):
    """A user's dict subclass: its class leads to the whole interpreter."""


@pytest.mark.usefixtures("bounded")
@pytest.mark.parametrize("fmt", ["openai-chat", "gemini"])
def test_a_dict_subclass_in_a_message_is_read_without_walking_into_its_class(
    fmt: ctxwin.FormatName,
) -> None:
    body = agent_body([[("t0", {"p": 1}, "x " * 80)], [("t1", {}, "y")]], format=fmt)
    items = body["messages" if fmt == "openai-chat" else "contents"]
    items[2] = _Payload(items[2])  # a message as the user's own dict type
    policy = ctxwin.Policy(POLICY)
    first = outcome(policy, body)
    assert not str(first).startswith(("FormatError", "MemoryError"))
    assert outcome(policy, body) == first == fresh(body)
    items[2] = dict(items[2])  # and back to a plain dict, in place of the subclass
    assert outcome(policy, body) == fresh(body)


@pytest.mark.usefixtures("bounded")
def test_a_str_subclass_set_in_place_is_read_as_a_fresh_copy_reads_it() -> None:
    class Text(str):
        pass

    body = agent_body([[("t0", {"p": 1}, "x")], [("t1", {}, "y")]], format="openai-chat")
    policy = ctxwin.Policy(POLICY)
    policy.apply(body)
    body["messages"][3]["content"] = Text(body["messages"][3]["content"])
    sent = ctxwin.Policy(POLICY).apply(copy.deepcopy(body)).request["messages"][3]["content"]
    assert type(sent) is str  # read as its plain text, as an Enum's value is
    assert outcome(policy, body) == fresh(body)


@pytest.mark.usefixtures("bounded")
def test_a_message_made_to_hold_itself_in_place_is_refused_as_a_fresh_copy_is() -> None:
    body = agent_body([[("t0", {"p": 1}, "x")], [("t1", {}, "y")]], format="openai-chat")
    policy = ctxwin.Policy(POLICY)
    policy.apply(body)
    message = body["messages"][3]
    message["extra"] = {"a": message, "b": message}  # doubles at each level
    assert "levels deep" in str(fresh(body))
    assert outcome(policy, body) == fresh(body)


def test_a_full_memo_forgets_its_older_half_at_once() -> None:
    """Dropping one entry per put made each put walk every slot dropped before it."""
    memo = Memo(max_entries=100)
    keys = [object() for _ in range(101)]
    for i, key in enumerate(keys):
        memo.put(key, i)
    assert len(memo) == 50
    assert memo.get(keys[50]) is None
    assert memo.get(keys[51]) == 51
    assert memo.get(keys[100]) == 100


def test_an_sdk_object_changed_in_place_is_read_again() -> None:
    """``messages.append(response.choices[0].message)`` puts the SDK's own object in the
    history; one changed in place (its content set, a call's arguments edited) was compared
    by identity only and went out as first read."""
    from openai.types.chat import ChatCompletionMessage

    call = {"id": "c1", "type": "function", "function": {"name": "t0", "arguments": "{}"}}
    said = ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": "first", "tool_calls": [call]}
    )
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            said,
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ]
    }
    policy = ctxwin.Policy(POLICY)
    assert policy.apply(body).request["messages"][1]["content"] == "first"
    said.content = "second"
    assert policy.apply(body).request["messages"][1]["content"] == "second"
    assert said.tool_calls is not None
    said.tool_calls[0].function.arguments = '{"path": "x"}'  # type: ignore[union-attr]
    sent = policy.apply(body).request["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"path": "x"}'
    assert outcome(policy, body) == fresh(body)


def test_an_sdk_object_holding_an_enum_changed_in_place_is_read_again() -> None:
    """A model whose fields hold what is not plain data (an Enum member) is walked in
    Python: through its fields too, not by identity."""

    class Role(str, enum.Enum):
        ASSISTANT = "assistant"

    class Said(BaseModel):
        role: Role
        content: str

    said = Said(role=Role.ASSISTANT, content="first")
    body = {"messages": [{"role": "user", "content": "go"}, said]}
    policy = ctxwin.Policy(POLICY)
    assert policy.apply(body, format="openai-chat").request["messages"][1]["content"] == "first"
    said.content = "second"
    assert policy.apply(body, format="openai-chat").request["messages"][1]["content"] == "second"


def _marked(request: dict[str, Any]) -> list[int]:
    return [
        i
        for i, m in enumerate(request["messages"])
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
    ]


@pytest.mark.parametrize("repeated_ids", [False, True])
def test_a_returned_request_changed_in_place_does_not_come_back(repeated_ids: bool) -> None:
    """Anthropic's usual caching code marks the last block of each request before sending
    it. The last message was one ctxwin made (a capped result; a renamed ``call_0``), kept
    by its memo: the marker came back in every later request, and the fifth was refused
    ("A maximum of 4 blocks with cache_control"; review)."""
    policy = ctxwin.Policy({"tools": {"*": {"max_tokens": 30}}}, format="anthropic")
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(6):
        call_id = "call_0" if repeated_ids else f"toolu_{turn}"
        use = {"type": "tool_use", "id": call_id, "name": "ls", "input": {"i": turn}}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": "word " * 200}
        history += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": history}
        request = policy.apply(body).request
        assert _marked(request) == []
        fresh = ctxwin.Policy({"tools": {"*": {"max_tokens": 30}}}, format="anthropic")
        assert request == fresh.apply(copy.deepcopy(body)).request
        last = request["messages"][-1]["content"][-1]  # ctxwin's: a capped result
        last["cache_control"] = {"type": "ephemeral"}
        last["content"] = "changed by the caller"  # any change, deep or not


def test_a_returned_message_read_from_sdk_objects_changed_in_place_does_not_come_back() -> None:
    """Anthropic's own tool loop appends ``response.content`` (SDK blocks): ctxwin sends its
    plain reading of that message, which its parse memo keeps. Marked in the returned
    request, the marker came back in every later request (the caller's objects had not
    changed, so parsing saw nothing): five breakpoints at the fifth turn (review)."""
    anthropic_types = pytest.importorskip("anthropic.types")
    policy = ctxwin.Policy({}, format="anthropic")
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(6):
        blocks = [
            anthropic_types.TextBlock(type="text", text=f"step {turn}"),
            anthropic_types.ToolUseBlock(
                type="tool_use", id=f"toolu_{turn}", name="ls", input={"i": turn}
            ),
        ]
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": "ok"}
        history += [{"role": "assistant", "content": blocks}, {"role": "user", "content": [result]}]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": history}
        request = policy.apply(body).request
        assert _marked(request) == []
        assert request == ctxwin.Policy({}, format="anthropic").apply(copy.deepcopy(body)).request
        request["messages"][-2]["content"][-1]["cache_control"] = {"type": "ephemeral"}


def test_a_changed_reading_of_sdk_objects_does_not_come_back_once_edited() -> None:
    """The review of 7571cb1: a message read from SDK objects (an OpenAI
    ``ChatCompletionMessage``) was handed out as the parse's own reading; changed by the
    caller, it came back once a later jump edited that message (its call's input cleared),
    in every request from then on. The reading is now never handed out, only copies."""
    chat = pytest.importorskip("openai.types.chat")
    from openai.types.chat.chat_completion_message_tool_call import (
        ChatCompletionMessageToolCall,
        Function,
    )

    config = {
        "context_window": 3000,
        "tokenizer": "o200k_base",
        "window": {"trigger": 0.5, "target": 0.3, "keep_rounds": 1, "clear_tool_inputs": True},
        "tools": {"*": {"max_tokens": 1500}},
    }
    policy = ctxwin.load_policy(config)
    history: list[Any] = [{"role": "user", "content": "start"}]
    for t in range(8):
        call = ChatCompletionMessageToolCall(
            id=f"call_{t}",
            type="function",
            function=Function(name="run", arguments=json.dumps({"cmd": "x " * 200})),
        )
        history.append(
            chat.ChatCompletionMessage(role="assistant", content=f"plan {t}", tool_calls=[call])
        )
        history.append({"role": "tool", "tool_call_id": f"call_{t}", "content": "out " * 150})
        body = {"model": "gpt-4o", "messages": history}
        request = policy.apply(body, format="openai-chat").request
        fresh = ctxwin.load_policy(config).apply(body, format="openai-chat").request
        assert request == fresh, t
        for message in request["messages"]:
            if message.get("role") == "assistant":
                message["content"] = "changed by the caller"
