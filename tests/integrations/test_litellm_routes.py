"""LiteLLM: the hook edits for the model a request goes to. On the proxy the client names a
model group (``my-claude``); the Router picks the deployment after ``async_pre_call_hook``
and hands ``async_pre_call_deployment_hook`` its ``litellm_params`` (``model``,
``base_model``...) and ``model_info`` (litellm 1.110.2 ``utils.async_pre_call_deployment_hook``,
called from ``client``'s ``wrapper_async`` with the kwargs the Router passes to
``litellm.acompletion``, ``metadata.model_group`` naming the group). Offline: the Router on
``mock_response``."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

import litellm

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": "auto",
    "cache_breakpoints": "auto",
    "window": {"trigger": 0.05, "target": 0.02, "keep_rounds": 1},
    "tools": {"*": {"max_tokens": 300}},
}
CLAUDE = {"model_name": "my-claude", "litellm_params": {"model": "anthropic/claude-sonnet-4-5"}}


def output(i: int) -> str:
    return "\n".join(f"read#{i} line {k}: value_{k} = compute(order_{i})" for k in range(250))


def chat(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You read files. " * 300},
        {"role": "user", "content": "go"},
    ]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": output(i)})
    return out


class Counted:
    """The hook's policy, counting its edits."""

    def __init__(self, hook: Any) -> None:
        self.edits = 0
        policy = hook.policy
        aapply = policy.aapply

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.edits += 1
            return await aapply(*args, **kwargs)

        policy.aapply = counted


def proxy(hook: Any, router: Any, data: dict[str, Any]) -> dict[str, Any]:
    """The proxy's flow: its pre-call hooks, then ``llm_router.acompletion(**data)``."""

    async def run() -> dict[str, Any]:
        edited: dict[str, Any] = await hook.async_pre_call_hook(None, None, data, "acompletion")
        await router.acompletion(**edited)
        return edited

    return asyncio.run(run())


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Any:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    monkeypatch.setattr(litellm, "callbacks", [hook])
    return hook


def test_the_proxy_edits_for_the_deployment_s_model_not_the_group_s_name(
    hook: Any, received: list[list[Any]]
) -> None:
    """Once the proxy's hook edited for ``my-claude``, a model ctxwin has no profile of
    (128,000 tokens assumed, no breakpoints), and the deployment hook let the request go."""
    router = litellm.Router(model_list=[CLAUDE])
    proxy(hook, router, {"model": "my-claude", "messages": chat(8), "mock_response": "ok"})
    result = hook.last_result
    assert result.model == "claude-sonnet-4-5"
    assert result.report.context_window == 200_000
    assert not result.report.notes
    assert len(result.report.breakpoints) == 2
    assert json.dumps(received[-1]).count('"cache_control"') == 2


def test_at_steady_state_a_proxy_request_is_edited_once(
    hook: Any, received: list[list[Any]]
) -> None:
    """The first request of a group is edited at its deployment; the next ones before
    routing, for the model its deployment was seen to be, and the deployment lets them go:
    one edit a request, and what is sent is what editing at the deployment sends."""
    counted = Counted(hook)
    router = litellm.Router(model_list=[CLAUDE])
    for turns in range(3, 8):
        data = {"model": "my-claude", "messages": chat(turns), "mock_response": "ok"}
        edited = proxy(hook, router, data)
        assert counted.edits == turns - 2
        assert (edited is data) == (turns == 3)  # the first one went to the deployment hook
    alone = CtxwinHook(ctxwin.Policy(POLICY))  # the same requests, edited at the deployment
    for turns in range(3, 8):
        kwargs = {"model": "anthropic/claude-sonnet-4-5", "messages": chat(turns)}
        out = asyncio.run(alone.async_pre_call_deployment_hook(kwargs, "acompletion"))
    assert received[-1] == [{k: v for k, v in m.items() if v is not None} for m in out["messages"]]


@pytest.mark.parametrize(
    "deployment",
    [
        {"litellm_params": {"model": "openai/my-gpt"}, "model_info": {"base_model": "gpt-4.1"}},
        {"litellm_params": {"model": "openai/my-gpt", "base_model": "openai/gpt-4.1"}},
    ],
)
def test_a_deployment_s_base_model_gives_the_profile(hook: Any, deployment: dict[str, Any]) -> None:
    """An Azure deployment name or a Bedrock ARN names no model: LiteLLM's ``base_model``
    (of the deployment's ``model_info`` or ``litellm_params``) does."""
    router = litellm.Router(model_list=[{"model_name": "g", **deployment}])
    asyncio.run(router.acompletion(model="g", messages=chat(3), mock_response="ok"))
    assert hook.last_result.model == "gpt-4.1"
    assert hook.last_result.report.context_window == 1_047_576


def deployment_kwargs(group: str, model: str, messages: list[Any]) -> dict[str, Any]:
    """What LiteLLM hands the deployment hook (the deployment's ``litellm_params``, the
    Router's metadata), as ``Router.acompletion`` passes it to ``litellm.acompletion``."""
    return {"model": model, "messages": messages, "metadata": {"model_group": group}}


def test_a_fallback_to_another_model_is_edited_for_that_model() -> None:
    """The proxy edited for the group's Claude; the Router falls back to a GPT-4 group:
    the request, sent unchanged, would be over GPT-4's 8,192 tokens."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    seen = deployment_kwargs("my-claude", "anthropic/claude-sonnet-4-5", chat(1))
    asyncio.run(hook.async_pre_call_deployment_hook(seen, "acompletion"))
    data = {"model": "my-claude", "messages": chat(8)}
    edited = asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion"))
    assert hook.last_result.report.context_window == 200_000
    fallback = deployment_kwargs("my-gpt", "gpt-4", edited["messages"])
    out = asyncio.run(hook.async_pre_call_deployment_hook(fallback, "acompletion"))
    assert out is not None
    assert hook.last_result.report.context_window == 8_192
    assert hook.last_result.report.tokens_after <= 8_192


def test_a_group_of_different_models_is_left_to_each_deployment() -> None:
    """Deployments of one group may be different models: the proxy cannot tell which the
    Router picks, so each deployment edits for its own."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    for model in ("anthropic/claude-sonnet-4-5", "gpt-4o"):
        kwargs = deployment_kwargs("mixed", model, chat(1))
        asyncio.run(hook.async_pre_call_deployment_hook(kwargs, "acompletion"))
    data = {"model": "mixed", "messages": chat(8)}
    assert asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion")) is data


def test_a_group_named_as_a_model_is_edited_before_routing() -> None:
    """A group named for its model (``gpt-4o``) is edited by the proxy's hook from its first
    request; its deployment lets it go."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "gpt-4o", "messages": chat(8)}
    edited = asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion"))
    assert edited is not data
    again = deployment_kwargs("gpt-4o", "gpt-4o", edited["messages"])
    assert asyncio.run(hook.async_pre_call_deployment_hook(again, "acompletion")) is None


def test_a_group_named_as_a_claude_model_is_edited_once_at_its_first_request(
    hook: Any, received: list[list[Any]]
) -> None:
    """A group named ``claude-sonnet-4-5``: before a deployment is seen, the proxy cannot
    tell whether its chat goes where ``cache_control`` counts. Edited before routing, it was
    edited again at the deployment (another route); it is left to the deployment."""
    counted = Counted(hook)
    named = {"model_name": "claude-sonnet-4-5", "litellm_params": CLAUDE["litellm_params"]}
    router = litellm.Router(model_list=[named])
    data = {"model": "claude-sonnet-4-5", "messages": chat(6), "mock_response": "ok"}
    assert proxy(hook, router, data) is data
    assert counted.edits == 1
    assert json.dumps(received[-1]).count('"cache_control"') == 2
