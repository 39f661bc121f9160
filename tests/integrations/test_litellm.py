"""LiteLLM: an offline agent loop on ``mock_response`` / ``mock_tool_calls`` with ten tool
turns of large results, the hook in ``litellm.callbacks``; and the proxy's pre-call hook."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
pytest.importorskip("litellm")

import itertools

import litellm
import litellm.main

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

POLICY = {
    "context_window": 16_000,
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {
        "search": {"select": "hits[].{path: path, line: line}", "max_tokens": 2000},
        "*": {"max_tokens": 1500},
    },
}
PLAN: list[list[tuple[str, dict[str, Any]]]] = [
    [("search", {"query": "alpha"})],
    [("read_file", {"path": "a.py"})],
    [("search", {"query": "beta"}), ("read_file", {"path": "b.py"})],
    [("read_file", {"path": "c.py"})],
    [("search", {"query": "gamma"}), ("search", {"query": "delta"})],
    [("read_file", {"path": "d.py"})],
    [("search", {"query": "epsilon"})],
    [("read_file", {"path": "e.py"})],
    [("search", {"query": "zeta"})],
    [("read_file", {"path": "f.py"})],
]
TOOLS = [
    {
        "type": "function",
        "function": {"name": n, "description": n, "parameters": {"type": "object"}},
    }
    for n in ("search", "read_file")
]


def big_search(query: str) -> str:
    hits = [
        {"path": f"src/{query}/{i}.py", "line": i, "snippet": f"def {query}_{i}(x): " * 12}
        for i in range(120)
    ]
    return json.dumps({"query": query, "hits": hits})


def big_file(path: str) -> str:
    return "\n".join(f"{path}:{i}: value_{i} = compute(alpha, beta, gamma)" for i in range(1100))


def tool_output(name: str, args: dict[str, Any]) -> str:
    return big_search(args["query"]) if name == "search" else big_file(args["path"])


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Any:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    monkeypatch.setattr(litellm, "callbacks", [hook])
    return hook


async def agent(history: list[Any]) -> None:
    for turn, calls in enumerate(PLAN):
        tool_calls = [
            {
                "id": f"call_{turn}_{k}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for k, (name, args) in enumerate(calls)
        ]
        response = await litellm.acompletion(
            model="gpt-4o", messages=history, tools=TOOLS, mock_tool_calls=tool_calls
        )
        message = response.choices[0].message  # a litellm Message object, appended as is
        history.append(message)
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            output = tool_output(call.function.name, args)
            history.append({"role": "tool", "tool_call_id": call.id, "content": output})
    await litellm.acompletion(model="gpt-4o", messages=history, mock_response="done")


def start() -> list[Any]:
    return [
        {"role": "system", "content": "You fix code."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Fix the login bug; here is the mockup."},
                {"type": "image_url", "image_url": {"url": "https://x.test/m.png"}},
            ],
        },
    ]


def results(messages: list[Any]) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"]
        for m in messages
        if isinstance(m, dict) and m.get("role") == "tool"
    }


def test_in_process_the_model_receives_the_edited_request(
    received: list[list[Any]], hook: Any
) -> None:
    history = start()
    asyncio.run(agent(history))
    assert len(received) == len(PLAN) + 1
    last = results(received[-1])
    assert any(v.startswith("[search result cleared") for v in last.values())
    selected = capped = 0
    for messages in received:
        for text in results(messages).values():
            if text.startswith("[{"):
                assert set(json.loads(text)[0]) == {"path", "line"}
                selected += 1
            elif "compute(alpha" in text:
                assert len(text) < len(big_file("a.py")) / 3
                capped += 1
    assert selected
    assert capped
    assert hook.last_result.tokens < POLICY["context_window"]
    # the agent's own history keeps every result whole, and its Message objects
    whole = results(history)
    assert len(whole) == 12
    assert all(len(v) > 20_000 for v in whole.values())
    assert sum(isinstance(m, litellm.Message) for m in history) == len(PLAN)


def test_in_process_pairing_ids_and_images_are_kept(received: list[list[Any]], hook: Any) -> None:
    history = start()
    asyncio.run(agent(history))
    for messages in received:
        assert ctxwin.check({"messages": messages}, format="openai-chat") == []
    assert set(results(received[-1])) == set(results(history))
    assert received[-1][1] == history[1]  # the user's message, image and all
    assert received[-1][1]["content"][1]["image_url"]["url"] == "https://x.test/m.png"


def test_at_most_one_prefix_break_per_window_jump(received: list[list[Any]], hook: Any) -> None:
    history = start()
    asyncio.run(agent(history))

    def plain(messages: list[Any]) -> list[Any]:
        return [m if isinstance(m, dict) else m.model_dump() for m in messages]

    breaks = jumps = 0
    cleared: set[str] = set()
    for prev, cur in itertools.pairwise(received):
        a, b = plain(prev), plain(cur)
        if b[: len(a)] != a:
            breaks += 1
        now = {k for k, v in results(cur).items() if "cleared" in v}
        if now - cleared:
            jumps += 1
        cleared = now
    assert jumps >= 1
    assert breaks <= jumps


def test_the_proxy_hook_edits_the_request_and_not_the_data_given() -> None:
    history = start()
    for turn in range(4):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": "{}"},
        }
        history.append(litellm.Message(role="assistant", content=None, tool_calls=[call]))
        history.append({"role": "tool", "tool_call_id": f"c{turn}", "content": big_file("x")})
    data = {"model": "gpt-4o", "messages": history, "tools": TOOLS}
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "completion"))
    assert data["messages"] is history  # the request given is untouched
    assert ctxwin.check({"messages": out["messages"]}, format="openai-chat") == []
    sent = results(out["messages"])
    assert all(len(v) < len(big_file("x")) / 3 for v in sent.values())
    assert out["messages"][0] is history[0]
    # the deployment hook does not edit the proxy's output a second time
    again = asyncio.run(hook.async_pre_call_deployment_hook(out, None))
    assert again is None


def test_other_calls_are_left_alone() -> None:
    """Embeddings, text completions: what is not a chat, Responses or Anthropic Messages
    request goes on as it is."""
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    data = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert asyncio.run(hook.async_pre_call_hook(None, None, data, "atext_completion")) is data
    assert asyncio.run(hook.async_pre_call_hook(None, None, {"input": "x"}, "embeddings")) == {
        "input": "x"
    }


def test_the_sync_edit_for_plain_completion(received: list[list[Any]]) -> None:
    hook = CtxwinHook(ctxwin.Policy(POLICY))
    history = [*start(), {"role": "assistant", "content": "ok"}]
    kwargs = hook.edit({"model": "gpt-4o", "messages": history})
    litellm.completion(**kwargs, mock_response="fine")
    assert received[-1] == kwargs["messages"]
    assert hook.last_result is not None


def test_litellm_usage_of_a_claude_model_is_read_whole() -> None:
    """The usage LiteLLM builds from a Claude response (its own code, offline) is read as
    the provider counted it: all the input (uncached, cache reads and writes) and the
    output. ``read_usage`` once took its cache fields for Anthropic's and read 0 input
    from a response nothing was cached for."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    config = AnthropicConfig()
    cached = config.calculate_usage(
        {
            "input_tokens": 6,
            "output_tokens": 50,
            "cache_creation_input_tokens": 283,
            "cache_read_input_tokens": 3822,
        },
        None,
    )
    assert ctxwin.read_usage(cached) == ctxwin.Usage(6 + 283 + 3822, 3822, 283, 50)
    plain = config.calculate_usage({"input_tokens": 5000, "output_tokens": 50}, None)
    assert ctxwin.read_usage(plain) == ctxwin.Usage(5000, 0, 0, 50)
