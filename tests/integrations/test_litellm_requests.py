"""LiteLLM: which requests the hook edits. A request it edited on the proxy is not edited
again at the deployment (LiteLLM's Router rebuilds the messages on the way); a tuple of
messages is edited as a list is; a new request built from an edited list is edited."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

import litellm
import litellm.main

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": 3000,
    "tokenizer": "o200k_base",
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.4, "keep_rounds": 2},
    "overflow": "drop_oldest_rounds",
    "tools": {"*": {"max_tokens": 600}},
}


def output(i: int) -> str:
    return "\n".join(f"read#{i} line {k}: value_{k} = compute(order_{i})" for k in range(250))


def turn(i: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output(i)},
    ]


def history(turns: int = 6) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "q"}, *(m for i in range(turns) for m in turn(i))]


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Any:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    monkeypatch.setattr(litellm, "callbacks", [hook])
    return hook


def sent(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as LiteLLM sends them on (``None`` fields left out)."""
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def tool_texts(messages: list[Any]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool"]


def test_a_request_edited_by_the_proxy_hook_is_not_edited_at_the_deployment(
    received: list[list[Any]], hook: Any
) -> None:
    """The proxy's flow: ``async_pre_call_hook`` then ``Router.acompletion(**data)``, for
    a model group the hook has seen a deployment of. The Router hands the deployment hook a
    rebuilt copy of the messages, which once went unrecognised: the request was edited
    twice and ``last_result`` told of a no-op."""
    router = litellm.Router(model_list=[{"model_name": "m", "litellm_params": {"model": "gpt-4o"}}])
    data = {"model": "m", "messages": history(), "mock_response": "ok"}

    async def proxy() -> Any:
        await router.acompletion(model="m", messages=history(1), mock_response="ok")
        edited = await hook.async_pre_call_hook(None, None, data, "acompletion")
        first = hook.last_result
        await router.acompletion(**edited)
        return edited, first

    edited, first = asyncio.run(proxy())
    assert hook.last_result is first
    report = first.report
    assert report.tokens_before > 5 * report.tokens_after
    assert sent(received[-1]) == sent(edited["messages"])


def test_a_tuple_of_messages_is_edited(received: list[list[Any]], hook: Any) -> None:
    given = tuple(history())
    asyncio.run(litellm.acompletion(model="gpt-4o", messages=given, mock_response="ok"))
    assert hook.last_result is not None
    assert sent(received[-1]) == sent(hook.last_result.request["messages"])
    assert all(len(t) < len(output(0)) / 3 for t in tool_texts(received[-1]))


def test_the_sync_edit_takes_a_tuple() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    out = hook.edit({"model": "gpt-4o", "messages": tuple(history())})
    assert isinstance(out["messages"], list)
    assert out["messages"] == hook.last_result.request["messages"]
    assert all(len(t) < len(output(0)) / 3 for t in tool_texts(out["messages"]))


def test_messages_that_are_no_sequence_of_messages_are_refused() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    with pytest.raises(ctxwin.InputError) as caught:
        hook.edit({"model": "gpt-4o", "messages": "hi"})
    assert str(caught.value) == "messages: a list or tuple of chat messages, not str"


def test_a_new_request_built_from_an_edited_list_is_edited() -> None:
    """The list ``edit`` returns, kept as the history and sent again with a new turn: the
    hook once took it for a request it had edited (the same list object) and let the new
    result through whole."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    kept = hook.edit({"model": "gpt-4o", "messages": history()})["messages"]
    first = hook.last_result
    kept.extend(turn(6))
    data = {"model": "gpt-4o", "messages": kept}
    out = asyncio.run(hook.async_pre_call_deployment_hook(data, "acompletion"))
    assert out is not None
    assert hook.last_result is not first
    assert out["messages"] == hook.last_result.request["messages"]
    assert all(len(t) < len(output(6)) / 3 for t in tool_texts(out["messages"]))


def test_an_edited_request_sent_again_unchanged_goes_as_it_is(
    received: list[list[Any]], hook: Any
) -> None:
    """What the hook sent, sent again: ctxwin on its own output changes nothing, so it goes
    as it is and ``last_result`` stays the edit's."""
    kwargs = hook.edit({"model": "gpt-4o", "messages": history()})
    first = hook.last_result
    asyncio.run(litellm.acompletion(**kwargs, mock_response="ok"))
    assert hook.last_result is first
    assert sent(received[-1]) == sent(kwargs["messages"])


def test_the_body_counted_holds_the_tool_choice_and_the_reasoning_settings() -> None:
    """The hook left ``tool_choice`` and (Responses) ``reasoning`` out of the body the policy
    counts: a Claude request forcing a tool was counted with the 346-token tool prompt, not
    313, and ``reasoning={"context": "all_turns"}`` on gpt-5 counted an earlier turn's
    reasoning as dropped: 15 tokens for a request of 5,623 (review)."""
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    chat = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "go"}],
        "tools": tools,
        "tool_choice": "required",
    }
    encrypted = "gAAAA" + "x" * 40_000
    responses = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "first"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": encrypted},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": "answer"},
            {"role": "user", "content": "second"},
        ],
        "reasoning": {"effort": "high", "context": "all_turns"},
    }
    cases = ((chat, "acompletion", "openai-chat"), (responses, "aresponses", "openai-responses"))
    for request, call, fmt in cases:
        hook = CtxwinHook(ctxwin.Policy({}))
        asyncio.run(hook.aedit(request, call))
        direct = ctxwin.Policy({}).apply(request, format=fmt)
        assert hook.last_result is not None
        assert hook.last_result.report.tokens_before == direct.report.tokens_before
    assert direct.report.tokens_before > 5000  # the earlier turn's reasoning is read


def test_the_body_counted_holds_the_output_schema() -> None:
    """The hook left ``response_format`` (a pydantic class too, as LiteLLM takes it),
    Responses ``text`` and Anthropic ``output_config`` out of the body the policy counts."""
    import pydantic

    class Answer(pydantic.BaseModel):
        verdict: str
        reasons: list[str]

    schema = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(30)}}
    format_ = {"type": "json_schema", "name": "a", "schema": schema}
    user = [{"role": "user", "content": "go"}]
    cases = (
        ({"model": "gpt-4o", "messages": user, "response_format": Answer}, "acompletion"),
        ({"model": "gpt-4.1", "input": user, "text": {"format": format_}}, "aresponses"),
        (
            {"model": "claude-sonnet-4-5", "messages": user, "output_config": {"format": format_}},
            "anthropic_messages",
        ),
    )
    for request, call in cases:
        plain = {k: v for k, v in request.items() if k in ("model", "messages", "input")}
        counts = []
        for body in (plain, request):
            hook = CtxwinHook(ctxwin.Policy({}))
            asyncio.run(hook.aedit(body, call))
            assert hook.last_result is not None
            counts.append(hook.last_result.report.tokens_before)
        assert counts[1] - counts[0] > 20, call
