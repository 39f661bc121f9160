"""LiteLLM beyond chat completions: Responses (``litellm.responses`` / ``aresponses``, the
proxy's ``/v1/responses``) and Anthropic Messages (``litellm.anthropic_messages``, the
proxy's ``/v1/messages``) requests are edited in their own formats, and what the provider
receives is read off an offline HTTP transport (``httpx.MockTransport``); the hook writes
out no whole history per request."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

import httpx
import litellm
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

import ctxwin
import ctxwin.integrations.litellm as hook_module
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": 3000,
    "tokenizer": "o200k_base",
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.4, "keep_rounds": 1},
    "tools": {"*": {"max_tokens": 300}},
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "gpt-4o",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def output(i: int) -> str:
    return "\n".join(f"read#{i} line {k}: value_{k} = compute(order_{i})" for k in range(250))


def items(turns: int = 3) -> list[dict[str, Any]]:
    """A Responses input: a prompt and ``turns`` calls with long outputs."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(turns):
        out.append({"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"})
        out.append({"type": "function_call_output", "call_id": f"c{i}", "output": output(i)})
    return out


def anthropic_messages(turns: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(turns):
        call = {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {}}
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": output(i)}
        out.append({"role": "assistant", "content": [call]})
        out.append({"role": "user", "content": [result]})
    return out


class Provider:
    """An offline OpenAI Responses and Anthropic Messages endpoint: records each body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=RESPONSE if "/responses" in str(request.url) else MESSAGE)

    def aclient(self) -> AsyncHTTPHandler:
        return AsyncHTTPHandler(transport=httpx.MockTransport(self))

    def client(self) -> HTTPHandler:
        return HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(self)))


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Any:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    monkeypatch.setattr(litellm, "callbacks", [hook])
    return hook


def outputs(body: dict[str, Any]) -> list[str]:
    return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]


def results(body: dict[str, Any]) -> list[Any]:
    return [
        b["content"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


def shortened(texts: list[Any]) -> bool:
    return len(texts) == 3 and all(len(str(t)) < len(output(0)) / 3 for t in texts)


def test_aresponses_reaches_the_provider_edited(hook: Any) -> None:
    """``litellm.aresponses`` runs the deployment hook with the Responses ``input``: once
    left as it was (only chat requests were edited), every output went whole."""
    provider = Provider()
    given = items()
    call = litellm.aresponses(
        model="openai/gpt-4o", input=given, api_key="x", client=provider.aclient()
    )
    asyncio.run(call)
    (body,) = provider.bodies
    assert shortened(outputs(body))
    assert ctxwin.check({"input": body["input"]}, format="openai-responses") == []
    assert hook.last_result.report.format == "openai-responses"
    assert given == items()  # the input given is untouched


def test_sync_responses_reaches_the_provider_edited(hook: Any) -> None:
    """Plain ``litellm.responses`` runs the deployment hook too (unlike ``completion``)."""
    provider = Provider()
    litellm.responses(model="openai/gpt-4o", input=items(), api_key="x", client=provider.client())
    (body,) = provider.bodies
    assert shortened(outputs(body))


def test_anthropic_messages_reach_the_provider_edited(hook: Any) -> None:
    """``litellm.anthropic_messages`` (what the proxy's ``/v1/messages`` calls) hands the
    hook Anthropic messages, edited as Anthropic's with the system prompt counted."""
    provider = Provider()
    call = litellm.anthropic_messages(
        model="anthropic/claude-sonnet-4-5",
        messages=anthropic_messages(),
        system="You read files.",
        max_tokens=10,
        api_key="x",
        client=provider.aclient(),
    )
    asyncio.run(call)
    (body,) = provider.bodies
    assert shortened(results(body))
    assert body["system"] == "You read files."
    assert ctxwin.check(body, format="anthropic") == []
    assert hook.last_result.report.format == "anthropic"


def test_the_proxy_edits_a_responses_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``/v1/responses`` on the proxy, for a model group the hook has seen a deployment of:
    the pre-call hook edits the ``input``; the Router hands the deployment hook its copy of
    the edited request, which goes on as it is."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    monkeypatch.setattr(litellm, "callbacks", [hook])
    answers: list[Any] = []
    deployment = hook.async_pre_call_deployment_hook

    async def spy(kwargs: dict[str, Any], call_type: Any) -> Any:
        answers.append((kwargs["input"], await deployment(kwargs, call_type)))
        return answers[-1][1]

    monkeypatch.setattr(hook, "async_pre_call_deployment_hook", spy)
    router = litellm.Router(model_list=[{"model_name": "m", "litellm_params": {"model": "gpt-4o"}}])
    data = {"model": "m", "input": items(), "mock_response": "ok"}

    async def proxy() -> tuple[dict[str, Any], Any]:
        await router.aresponses(model="m", input=items(1), mock_response="ok")  # group seen
        answers.clear()
        edited = await hook.async_pre_call_hook(None, None, data, "aresponses")
        first = hook.last_result
        await router.aresponses(**edited)
        return edited, first

    edited, first = asyncio.run(proxy())
    assert shortened(outputs(edited))
    [(seen, answer)] = answers
    assert seen == edited["input"]
    assert answer is None
    assert hook.last_result is first
    assert data["input"] == items()


def test_a_responses_input_of_one_string_is_left_alone() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "gpt-4o", "input": "hi"}
    out = asyncio.run(hook.async_pre_call_deployment_hook(data, "aresponses"))
    assert out is None
    assert hook.last_result is None


def test_a_responses_input_of_another_type_is_an_input_error() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "gpt-4o", "input": {"role": "user", "content": "hi"}}
    with pytest.raises(ctxwin.InputError) as caught:
        asyncio.run(hook.async_pre_call_deployment_hook(data, "aresponses"))
    assert str(caught.value) == "input: a string, or a list or tuple of input items, not dict"


def test_anthropic_messages_of_another_type_are_an_input_error() -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "claude-sonnet-4-5", "messages": "hi"}
    with pytest.raises(ctxwin.InputError) as caught:
        asyncio.run(hook.async_pre_call_hook(None, None, data, "anthropic_messages"))
    assert str(caught.value) == "messages: a list or tuple of Anthropic messages, not str"


@pytest.mark.parametrize(
    ("call_type", "data", "format"),
    [
        ("aresponses", {"model": "gpt-4o", "input": items(1)}, "openai-responses"),
        (
            "anthropic_messages",
            {"model": "claude-sonnet-4-5", "messages": anthropic_messages(1)},
            "anthropic",
        ),
    ],
)
def test_the_recall_tool_is_added_in_the_requests_format(
    call_type: str, data: dict[str, Any], format: str
) -> None:
    policy = ctxwin.Policy({**POLICY, "recall": True}, store="memory")
    hook = CtxwinHook(policy, add_recall_tool=True)
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, call_type))
    assert out["tools"] == [policy.recall_tool(format)]


def test_legacy_functions_count_toward_the_budget() -> None:
    """A chat request's ``functions`` (the legacy tool definitions) are sent, and paid for,
    as ``tools`` are."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    functions = [{"name": f"f{i}", "description": "x " * 200, "parameters": {}} for i in range(3)]
    messages = [{"role": "user", "content": "hi"}]
    hook.edit({"model": "gpt-4o", "messages": messages})
    bare = hook.last_result.report.tokens_before
    hook.edit({"model": "gpt-4o", "messages": messages, "functions": functions})
    assert hook.last_result.report.tokens_before > bare + 3 * 200


def chat(turns: int) -> list[dict[str, Any]]:
    """A chat history of ``turns`` calls with short results (none edited): the history is
    many times its last message."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}: ok"})
    return out


class Hashed:
    """Spies on the hashing of the hook's module: the size of each thing it hashed."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._blake2b = hook_module.hashlib.blake2b

    def blake2b(self, data: bytes, **kwargs: Any) -> Any:
        self.sizes.append(len(data))
        return self._blake2b(data, **kwargs)


def test_the_deployment_hook_writes_out_no_whole_history(
    monkeypatch: pytest.MonkeyPatch, hook: Any
) -> None:
    """In-process, each ``acompletion`` once cost a serialization of the whole edited
    history (to recognise it, should it come back), and one of the whole request given when
    its length matched a remembered one: 2-9 ms on 1,000 messages, 3-15 times ``apply``.
    A request now costs its last message written out."""
    hashed = Hashed()
    monkeypatch.setattr(hook_module.hashlib, "blake2b", hashed.blake2b)
    for turns in (40, 41, 42):
        asyncio.run(litellm.acompletion(model="gpt-4o", messages=chat(turns), mock_response="ok"))
    assert hook.last_result is not None
    assert hashed.sizes
    assert max(hashed.sizes) < 2 * len(json.dumps(chat(1)[-1]))


def test_a_new_request_is_looked_up_by_its_last_message_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request as long as one the hook edited on the proxy (another conversation) is no
    longer written out whole to be looked up at the deployment."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    asyncio.run(hook.async_pre_call_hook(None, None, {"messages": chat(40)}, "acompletion"))
    other = [*chat(40)[:-1], {"role": "tool", "tool_call_id": "c39", "content": "other"}]
    hashed = Hashed()
    monkeypatch.setattr(hook_module.hashlib, "blake2b", hashed.blake2b)
    out = asyncio.run(hook.async_pre_call_deployment_hook({"messages": other}, "acompletion"))
    assert out is not None
    assert out["messages"][-1]["content"] == "other"
    assert max(hashed.sizes) < 2 * len(json.dumps(other[-1]))


def test_an_anthropic_request_keeps_to_four_cache_breakpoints() -> None:
    """Under ``cache_breakpoints: auto``, a ``/v1/messages`` request's top-level
    ``cache_control`` (automatic caching) takes one of Anthropic's four breakpoints, as its
    system prompt's and tools' do: ctxwin places one on the messages, not two (a fifth is a
    400, "A maximum of 4 blocks with cache_control may be provided")."""
    marker = {"type": "ephemeral"}
    data = {
        "model": "claude-sonnet-4-5",
        "messages": anthropic_messages(6),
        "cache_control": marker,
        "system": [{"type": "text", "text": "You read files. " * 400, "cache_control": marker}],
        "tools": [
            {"name": "read", "input_schema": {"type": "object"}, "cache_control": marker},
        ],
    }
    config = {"cache_breakpoints": "auto", "window": {"trigger": 0.02, "target": 0.01}}
    hook = CtxwinHook(ctxwin.Policy({**POLICY, **config, "context_window": 200_000}))
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "anthropic_messages"))
    assert json.dumps(out).count('"cache_control"') == 4
    assert len(hook.last_result.report.breakpoints) == 1


def test_an_anthropic_request_cached_for_an_hour_gets_hour_long_breakpoints() -> None:
    """A ``/v1/messages`` request's top-level ``cache_control`` with ``ttl: "1h"`` puts a
    1-hour breakpoint at its end: the ones ctxwin places before it take the hour (a
    5-minute one before a 1-hour one is a 400)."""
    hour = {"type": "ephemeral", "ttl": "1h"}
    data = {"model": "claude-sonnet-4-5", "messages": anthropic_messages(6), "cache_control": hour}
    config = {"cache_breakpoints": "auto", "window": {"trigger": 0.02, "target": 0.01}}
    hook = CtxwinHook(ctxwin.Policy({**POLICY, **config, "context_window": 200_000}))
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "anthropic_messages"))
    placed = [
        block["cache_control"]
        for msg in out["messages"]
        if isinstance(msg["content"], list)
        for block in msg["content"]
        if "cache_control" in block
    ]
    assert len(placed) == len(hook.last_result.report.breakpoints) >= 1
    assert all(v == hour for v in placed)


@pytest.fixture
def transport(monkeypatch: pytest.MonkeyPatch) -> Iterator[Provider]:
    """LiteLLM's own HTTP clients (the ones it makes for a call given no ``client``) on an
    offline transport; its cache of clients emptied before and after."""
    provider = Provider()
    litellm.in_memory_llm_clients_cache.flush_cache()
    monkeypatch.setattr(litellm, "disable_aiohttp_transport", True)
    offline = staticmethod(lambda *args, **kwargs: httpx.MockTransport(provider))
    monkeypatch.setattr(AsyncHTTPHandler, "create_async_transport", offline)
    yield provider
    litellm.in_memory_llm_clients_cache.flush_cache()


def test_an_anthropic_request_bridged_to_openai_is_edited_once(
    hook: Any, transport: Provider
) -> None:
    """``anthropic_messages`` to an OpenAI model: LiteLLM translates the request and sends
    it by an ``aresponses`` call of its own, inside the first and with its logging object
    (``LiteLLMMessagesToCompletionTransformationHandler``). The translation of the edited
    request goes as it is: edited a second time, ``last_result`` told of a no-op."""
    call = litellm.anthropic_messages(
        model="openai/gpt-4o", messages=anthropic_messages(), max_tokens=10, api_key="x"
    )
    asyncio.run(call)
    (body,) = transport.bodies
    assert shortened(outputs(body))
    report = hook.last_result.report
    assert report.format == "anthropic"
    assert report.tokens_before > 5 * report.tokens_after
