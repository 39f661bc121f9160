"""Preserved thinking through the integrations: on a model that checks the prefix of the
thinking blocks sent back (``claude-fable-5-1``), the body each framework sends after ctxwin
edited its messages holds no thinking block whose prefix changed since it was produced
(checked as :class:`tests.steps.test_preserved_thinking.PrefixCheckingApi` checks it)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import ctxwin
from tests.steps.test_preserved_thinking import PrefixCheckingApi, _prefixes

FABLE, OPUS = "claude-fable-5-1", "claude-opus-4-5"
POLICY: dict[str, Any] = {
    "context_window": 6000,
    "tokenizer": "o200k_base",
    "window": {"keep_rounds": 2, "clear_tool_inputs": True},
    "overflow": "drop_oldest_rounds",
    "tools": {"*": {"max_tokens": 600}},
}
STEPS_PER_TASK = 9


def plan(step: int) -> str:
    return f"plan {step} " * 20


def file_text(path: str) -> str:
    return "\n".join(f"line {i} of {path}: value = {i * len(path)}" for i in range(45))


def signatures(body: dict[str, Any]) -> list[str]:
    """The signatures of the thinking blocks of an Anthropic body, in order."""
    return [
        str(b.get("signature") or b.get("data"))
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") in ("thinking", "redacted_thinking")
    ]


# ------------------------------------------------------------------ pydantic-ai


class AnthropicServer:
    """A fake Anthropic Messages endpoint for pydantic-ai's ``AnthropicModel``: it checks
    each request's thinking blocks as the API does, and answers with signed thinking and a
    call (a text answer every ``STEPS_PER_TASK``-th step)."""

    def __init__(self) -> None:
        self.api = PrefixCheckingApi()
        self.bodies: list[dict[str, Any]] = []
        self.failures: list[list[str]] = []
        self.capability: Any = None
        self.edited: list[list[str]] = []
        """The thinking ctxwin's edited body held at each request, by signature."""

    def __call__(self, request: Any) -> Any:
        import httpx2 as httpx

        body = json.loads(request.content)
        step = len(self.bodies)
        self.bodies.append(body)
        self.edited.append(signatures(self.capability.last_result.request))
        thinking = {"type": "thinking", "thinking": plan(step), "signature": f"sig-{step}"}
        if step % STEPS_PER_TASK == STEPS_PER_TASK - 1:
            last: dict[str, Any] = {"type": "text", "text": f"done {step}"}
            stop = "end_turn"
        else:
            path = f"src/module_{step}.py"
            why = "to see what it does " * 6
            last = {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file"}
            last["input"] = {"path": path, "why": why}
            stop = "tool_use"
        content = [thinking, last]
        self.failures.append(self.api.send(body, {"role": "assistant", "content": content}))
        reply = {
            "id": f"msg_{step}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return httpx.Response(200, json=reply)


def pydantic_ai_loop(model_name: str, tasks: int = 4) -> tuple[AnthropicServer, list[Any]]:
    """Tasks of a tool loop each, run by an agent on ``AnthropicModel`` with ``ContextWindow``
    (one run per task, on the history of the ones before)."""
    pytest.importorskip("pydantic_ai")
    httpx = pytest.importorskip("httpx2")
    pytest.importorskip("anthropic")
    from anthropic import AsyncAnthropic
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from ctxwin.integrations.pydantic_ai import ContextWindow

    server = AnthropicServer()
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    provider = AnthropicProvider(anthropic_client=AsyncAnthropic(api_key="x", http_client=client))
    capability = server.capability = ContextWindow(ctxwin.Policy(POLICY), observe=False)
    agent = Agent(
        AnthropicModel(model_name, provider=provider),
        instructions="You are a coding agent. Use the tools.",
        capabilities=[capability],
        model_settings={"max_tokens": 4096},  # a plain request (no streaming)
    )

    @agent.tool_plain
    def read_file(path: str, why: str = "") -> str:
        """Read a file."""
        return file_text(path)

    messages: list[Any] = []
    results = []
    for task in range(tasks):
        prompt = f"Task {task}: fix the failing test."
        run = asyncio.run(agent.run(prompt, message_history=messages))
        messages = run.all_messages()
        results.append(capability.last_result)
    return server, results


def test_pydantic_ai_sends_no_thinking_bound_to_a_changed_prefix() -> None:
    """The window clears and drops inside the tool loops; the thinking it invalidates
    leaves the ``ModelResponse`` copies pydantic-ai sends (once, every ``ThinkingPart`` was
    kept when a block went: the API answered 400, 'The block is bound to a different
    conversation')."""
    server, _ = pydantic_ai_loop(FABLE)
    assert len(server.bodies) == 4 * STEPS_PER_TASK
    assert [f for f in server.failures if f] == []
    assert [signatures(b) for b in server.bodies] == server.edited
    assert all("block_binding" not in json.dumps(b.get("thinking")) for b in server.bodies)
    sent = [len(_prefixes(b)) for b in server.bodies]
    replies = [sum(m["role"] == "assistant" for m in b["messages"]) for b in server.bodies]
    assert any(s < r for s, r in zip(sent, replies, strict=True)), "no thinking removed"


@pytest.mark.filterwarnings("ignore:The model 'claude-opus-4-5' is deprecated:DeprecationWarning")
def test_pydantic_ai_on_a_model_without_the_check_keeps_its_thinking() -> None:
    """claude-opus-4-5: the same loop keeps every thinking block of the messages it sends
    (and the API, checking nothing, would take them)."""
    server, _ = pydantic_ai_loop(OPUS)
    assert any(server.failures), "the window never invalidated thinking: the test tests nothing"
    assert [signatures(b) for b in server.bodies] == server.edited
    for body in server.bodies:
        replies = [m for m in body["messages"] if m["role"] == "assistant"]
        assert all(m["content"][0]["type"] == "thinking" for m in replies)


# ------------------------------------------------------------------ LiteLLM

CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "description": "Read a file.", "parameters": {}},
    }
]


def litellm_reply(step: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A reply as LiteLLM's ``Message`` holds it (thinking in ``thinking_blocks`` and
    ``reasoning_content``) and as Anthropic sent it (thinking first)."""
    thinking = {"type": "thinking", "thinking": plan(step), "signature": f"sig-{step}"}
    chat: dict[str, Any] = {"role": "assistant", "thinking_blocks": [thinking]}
    chat["reasoning_content"] = plan(step)
    if step % STEPS_PER_TASK == STEPS_PER_TASK - 1:
        chat["content"] = f"done {step}"
        return chat, {"role": "assistant", "content": [thinking, {"type": "text", "text": "x"}]}
    args = {"path": f"src/module_{step}.py", "why": "to see what it does " * 6}
    function = {"name": "read_file", "arguments": json.dumps(args)}
    chat["content"] = None
    chat["tool_calls"] = [{"id": f"toolu_{step}", "type": "function", "function": function}]
    call = {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file", "input": args}
    return chat, {"role": "assistant", "content": [thinking, call]}


def to_anthropic(model: str, messages: list[Any]) -> dict[str, Any]:
    """The body LiteLLM's Anthropic transformation makes of a chat request (no network)."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    config = AnthropicConfig()
    given = {"tools": CHAT_TOOLS, "max_tokens": 4096}
    optional = config.map_openai_params(given, {}, model, drop_params=False)
    return dict(config.transform_request(model, messages, optional, {}, {}))


def litellm_loop(
    model: str, steps: int = 36, **extra: Any
) -> tuple[list[list[str]], list[Any], list[Any]]:
    """A growing tool loop through the LiteLLM hook (its deployment hook, as LiteLLM runs it
    for ``acompletion``): the signatures failing the prefix check in the Anthropic body
    LiteLLM makes of each edited request, the edited requests and the hook's results."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices
    pytest.importorskip("litellm")
    from ctxwin.integrations.litellm import CtxwinHook

    hook = CtxwinHook(ctxwin.Policy(POLICY))
    api = PrefixCheckingApi()
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    failures, sent, results = [], [], []
    for step in range(steps):
        data = {"model": f"anthropic/{model}", "messages": list(history), "tools": CHAT_TOOLS}
        data.update(extra)
        out = asyncio.run(hook.async_pre_call_deployment_hook(data, "acompletion"))
        assert out is not None
        chat, reply = litellm_reply(step)
        failures.append(api.send(to_anthropic(model, out["messages"]), reply))
        sent.append(out)
        results.append(hook.last_result)
        history.append(chat)
        if "tool_calls" in chat:
            text = file_text(f"src/module_{step}.py")
            history.append({"role": "tool", "tool_call_id": f"toolu_{step}", "content": text})
        else:
            history.append({"role": "user", "content": f"Now the next task ({step})."})
    return failures, sent, results


pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")  # LiteLLM's schemas


def test_litellm_sends_claude_no_thinking_bound_to_a_changed_prefix() -> None:
    """The window removes the invalidated thinking from ``thinking_blocks`` (once it could
    not: the field was counted with its message, never parsed; LiteLLM sent every entry
    back and the API answered 400)."""
    failures, sent, results = litellm_loop(FABLE)
    assert [f for f in failures if f] == []
    removed = [e for r in results for e in r.report.edits if e.tool == "(thinking)"]
    assert removed, "the window never invalidated thinking: the test tests nothing"
    assert all(e.tokens_before > 0 for e in removed)
    for out in sent:  # every thinking LiteLLM sends is in the field, as it came
        kept = [b for m in out["messages"] for b in m.get("thinking_blocks", ())]
        assert len({b["signature"] for b in kept}) == len(kept)
        assert all(
            b
            == {
                "type": "thinking",
                "thinking": plan(int(b["signature"][4:])),
                "signature": b["signature"],
            }
            for b in kept
        )


@pytest.mark.filterwarnings("ignore:The model 'claude-opus-4-5' is deprecated:DeprecationWarning")
def test_litellm_to_a_claude_without_the_check_keeps_its_thinking() -> None:
    """claude-opus-4-5: the hook reads ``thinking_blocks`` as the blocks that open a turn
    (as for every Claude model LiteLLM sends a chat to) but removes none of them: every
    assistant message it sends carries the thinking it came with."""
    failures, sent, results = litellm_loop(OPUS)
    assert any(failures), "the window never invalidated thinking: the test tests nothing"
    assert not [e for r in results for e in r.report.edits if e.tool == "(thinking)"]
    for out in sent:
        replies = [m for m in out["messages"] if m["role"] == "assistant"]
        assert all(len(m["thinking_blocks"]) == 1 for m in replies)


# ------------------------------------------------------------------ LangChain


def lc_reply(step: int) -> Any:
    """An AIMessage as ChatAnthropic makes it: its thinking and ``tool_use`` blocks in its
    content, the call in ``tool_calls`` too."""
    from langchain_core.messages import AIMessage

    thinking = {"type": "thinking", "thinking": plan(step), "signature": f"sig-{step}"}
    if step % STEPS_PER_TASK == STEPS_PER_TASK - 1:
        return AIMessage([thinking, {"type": "text", "text": f"done {step}"}], id=f"a{step}")
    args = {"path": f"src/module_{step}.py", "why": "to see what it does " * 6}
    use = {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file", "input": args}
    call = {"name": "read_file", "args": args, "id": f"toolu_{step}", "type": "tool_call"}
    return AIMessage([thinking, use], tool_calls=[call], id=f"a{step}")


def lc_to_anthropic(messages: list[Any]) -> dict[str, Any]:
    """The Anthropic body ChatAnthropic sends for ``messages`` (its ``_format_messages``, for
    the shapes here): the system message apart, a ``tool_use`` block's input from the
    message's ``tool_calls``, tool messages as ``tool_result`` blocks of a user message,
    consecutive user content merged."""
    body: dict[str, Any] = {"system": None, "tools": TOOLS_ANTHROPIC, "messages": []}
    out = body["messages"]
    for m in messages:
        if m.type == "system":
            body["system"] = m.content
            continue
        if m.type == "ai":
            args = {c["id"]: c["args"] for c in m.tool_calls}
            content = m.content if isinstance(m.content, list) else [m.content]
            blocks = [
                {**b, "input": args[b["id"]]} if b.get("type") == "tool_use" else b
                for b in (
                    c if isinstance(c, dict) else {"type": "text", "text": c} for c in content
                )
            ]
            out.append({"role": "assistant", "content": blocks})
            continue
        if m.type == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
        else:
            block = {"type": "text", "text": m.content}
        if out and out[-1]["role"] == "user":
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return body


TOOLS_ANTHROPIC = [{"name": "read_file", "description": "Read a file.", "input_schema": {}}]


def langchain_loop(model_name: str, tasks: int = 4) -> tuple[list[list[str]], list[Any]]:
    """Tasks of a tool loop each, run by a LangChain agent with ``CtxwinMiddleware`` on a
    fake chat model named ``model_name``: the signatures failing the check in the body
    ChatAnthropic would send for each model call, and what the model received."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    from ctxwin.integrations.langchain import CtxwinMiddleware
    from tests.integrations.lc_kit import RecordingModel

    class Claude(RecordingModel):
        model_name: str = ""

    @tool("read_file")
    def read(path: str, why: str = "") -> str:
        """Read a file."""
        return file_text(path)

    replies = [lc_reply(step) for step in range(tasks * STEPS_PER_TASK)]
    model = Claude(messages=iter(replies), model_name=model_name)
    middleware = CtxwinMiddleware(ctxwin.Policy(POLICY), observe=False)
    agent = create_agent(
        model, [read], system_prompt="You are a coding agent.", middleware=[middleware]
    )
    history: list[Any] = []
    for task in range(tasks):
        history.append(HumanMessage(f"Task {task}: fix the failing test."))
        history = list(agent.invoke({"messages": history})["messages"])
    api = PrefixCheckingApi()
    failures = []
    for got, reply in zip(model.received, replies, strict=True):
        answer = lc_to_anthropic([reply])["messages"][0]
        failures.append(api.send(lc_to_anthropic(got), answer))
    return failures, model.received


def test_langchain_sends_claude_no_thinking_bound_to_a_changed_prefix() -> None:
    """The thinking blocks the window removes leave the content of the AIMessages the
    middleware hands ChatAnthropic; the rest of each message is as it was."""
    failures, received = langchain_loop(FABLE)
    assert [f for f in failures if f] == []
    removed = [
        m for got in received for m in got if m.type == "ai" and m.content[0]["type"] != "thinking"
    ]
    assert removed, "the window never invalidated thinking: the test tests nothing"
    assert all(m.tool_calls or m.content for m in removed)


def test_langchain_to_a_claude_without_the_check_keeps_its_thinking() -> None:
    """claude-opus-4-5: the same loop keeps the thinking of every AIMessage it sends."""
    failures, received = langchain_loop(OPUS)
    assert any(failures), "the window never invalidated thinking: the test tests nothing"
    ai = [m for got in received for m in got if m.type == "ai"]
    assert all(m.content[0]["type"] == "thinking" for m in ai)


def test_litellm_asking_the_api_to_drop_keeps_the_thinking() -> None:
    """A chat passing ``thinking.block_binding.prefix_mismatch_behavior: drop_block`` (LiteLLM
    sends it on, with the beta header) keeps every thinking block: the API drops those
    that fail."""
    binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    _, sent, results = litellm_loop(FABLE, steps=20, thinking=binding)
    assert not [e for r in results for e in r.report.edits if e.tool == "(thinking)"]
    _, plain, _ = litellm_loop(FABLE, steps=20)
    field = [len(m.get("thinking_blocks", ())) for m in sent[-1]["messages"]]
    assert sum(field) > sum(len(m.get("thinking_blocks", ())) for m in plain[-1]["messages"])


def test_thinking_blocks_that_are_not_a_list_are_refused_where_they_are() -> None:
    from ctxwin.formats._chat_thinking import ClaudeThinkingChatAdapter

    body = {"messages": [{"role": "user", "content": "go"}]}
    body["messages"].append({"role": "assistant", "content": "x", "thinking_blocks": "oops"})
    with pytest.raises(ctxwin.FormatError) as err:
        ctxwin.Policy(POLICY).apply(body, format=ClaudeThinkingChatAdapter(), model=FABLE)
    assert err.value.path == "messages[1].thinking_blocks"
    assert "'thinking_blocks' must be a list of thinking blocks, not string" in str(err.value)


# ------------------------------------------- the Agents SDK on LitellmModel, and aresponses


def agents_litellm_loop(model: str, calls: int = 24) -> tuple[list[list[str]], int]:
    """An Agents SDK run on ``LitellmModel`` with the filter, LiteLLM's ``acompletion``
    answered offline: the SDK keeps Claude's thinking as reasoning items and sends them back
    as each assistant message's ``thinking_blocks``. The signatures failing the prefix check
    in the Anthropic body LiteLLM makes of each request, and the thinking blocks removed."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    pytest.importorskip("agents.extensions.models.litellm_model")
    import agents.extensions.models.litellm_model as lm
    import litellm
    from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
    from openai.types.shared import Reasoning

    from ctxwin.integrations.openai_agents import input_filter

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return file_text(path)

    api, failures = PrefixCheckingApi(), []

    async def acompletion(**kw: Any) -> Any:
        step = len(failures)
        thinking = {"type": "thinking", "thinking": plan(step), "signature": f"sig-{step}"}
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": "done",
            "thinking_blocks": [thinking],
        }
        reply: dict[str, Any] = {"role": "assistant", "content": [thinking]}
        if step < calls - 1:
            args = json.dumps({"path": f"src/module_{step}.py"})
            function = {"name": "read_file", "arguments": args}
            msg |= {"content": None, "tool_calls": [{"id": f"toolu_{step}", "type": "function"}]}
            msg["tool_calls"][0]["function"] = function
            call = {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file"}
            reply["content"].append({**call, "input": json.loads(args)})
        failures.append(api.send(to_anthropic(model, kw["messages"]), reply))
        choice = {
            "index": 0,
            "message": msg,
            "finish_reason": "tool_calls" if step < calls - 1 else "stop",
        }
        usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}
        return litellm.ModelResponse(model=kw["model"], choices=[choice], usage=usage)

    saved = lm.litellm.acompletion
    lm.litellm.acompletion = acompletion
    try:
        filt = input_filter(ctxwin.Policy(POLICY))
        settings = ModelSettings(reasoning=Reasoning(effort="low"))
        claude = lm.LitellmModel(f"anthropic/{model}", api_key="x")
        agent = Agent(name="a", model=claude, tools=[read_file], model_settings=settings)
        config = RunConfig(call_model_input_filter=filt)
        asyncio.run(
            Runner.run(agent, "Fix the failing test.", run_config=config, max_turns=calls + 2)
        )
    finally:
        lm.litellm.acompletion = saved
    assert filt.last_result is not None
    removed = sum(1 for e in filt.last_result.report.edits if e.tool == "(thinking)")
    return failures, removed


def test_agents_on_litellm_sends_claude_no_thinking_bound_to_a_changed_prefix() -> None:
    """The review's case: the filter cleared an old tool output and kept the reasoning items
    produced after it, which the SDK sent back as thinking: Anthropic refuses such a request
    ("The block is bound to a different conversation")."""
    failures, removed = agents_litellm_loop(FABLE)
    assert [f for f in failures if f] == []
    assert removed, "the window never invalidated thinking: the test tests nothing"


def test_litellm_aresponses_sends_claude_no_reasoning_bound_to_a_changed_prefix() -> None:
    """LiteLLM's Responses bridge sends each reasoning item back to Claude as its signed
    thinking: the hook now removes those a change before them invalidated."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytest.importorskip("litellm")
    from ctxwin.integrations.litellm import CtxwinHook
    from tests.steps.test_preserved_thinking_responses import _output, _reply
    from tests.steps.test_preserved_thinking_responses import _prefixes as item_prefixes

    hook = CtxwinHook(ctxwin.Policy(POLICY))
    bound: dict[str, str] = {}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    failed, removed = [], 0
    for step in range(30):
        data = {"model": f"anthropic/{FABLE}", "input": list(history)}
        out = asyncio.run(hook.aedit(data, "aresponses"))
        prefixes = item_prefixes(out)
        failed += [s for s, p in prefixes.items() if bound.get(s, p) != p]
        removed += len(item_prefixes({"input": history})) - len(prefixes)
        reply = _reply(step, False)
        bound |= {
            s: p
            for s, p in item_prefixes({"input": [*out["input"], *reply]}).items()
            if s not in bound
        }
        history += [*reply, _output(step)]
    assert failed == []
    assert removed, "the window never invalidated reasoning: the test tests nothing"
