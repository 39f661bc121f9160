"""Integrations used the wrong way say so where they are used: a policy path where a Policy
goes, ``process_history`` in pydantic-ai's ``capabilities=[...]``, a LangGraph ``system``
that is no prompt, a repair that would leave a graph's state empty."""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable
from typing import Any

import pytest

import ctxwin

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices

# LiteLLM's own schemas make pydantic warn (ReadOnly TypedDict items) on first use
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

PATH = "examples/policy"


def _policy() -> ctxwin.Policy:
    return ctxwin.Policy({"context_window": 16_000})


# (framework to import, integration module, what the error names, how it is called)
ENTRY_POINTS: list[tuple[str, str, str, Callable[[Any, object], object]]] = [
    ("langchain.agents", "langchain", "CtxwinMiddleware", lambda m, p: m.CtxwinMiddleware(p)),
    ("langgraph", "langgraph", "pre_model_hook", lambda m, p: m.pre_model_hook(p)),
    ("langgraph", "langgraph", "repair_messages", lambda m, p: m.repair_messages(p)),
    ("langgraph", "langgraph", "repaired_messages", lambda m, p: m.repaired_messages(p, [])),
    ("langgraph", "langgraph", "recall_tool", lambda m, p: m.recall_tool(p)),
    ("pydantic_ai", "pydantic_ai", "ContextWindow", lambda m, p: m.ContextWindow(p)),
    ("pydantic_ai", "pydantic_ai", "process_history", lambda m, p: m.process_history(p)),
    ("pydantic_ai", "pydantic_ai", "HistoryProcessor", lambda m, p: m.HistoryProcessor(p)),
    ("pydantic_ai", "pydantic_ai", "recall_tool", lambda m, p: m.recall_tool(p)),
    ("agents", "openai_agents", "input_filter", lambda m, p: m.input_filter(p)),
    ("agents", "openai_agents", "InputFilter", lambda m, p: m.InputFilter(p)),
    ("agents", "openai_agents", "recall_tool", lambda m, p: m.recall_tool(p)),
    ("litellm", "litellm", "CtxwinHook", lambda m, p: m.CtxwinHook(p)),
]


@pytest.mark.parametrize(
    ("framework", "module", "what", "make"),
    ENTRY_POINTS,
    ids=[f"{module}.{what}" for _, module, what, _ in ENTRY_POINTS],
)
@pytest.mark.parametrize("given", [PATH, None], ids=["path", "none"])
def test_a_policy_that_is_no_policy_is_refused_where_it_is_passed(
    framework: str, module: str, what: str, make: Callable[[Any, object], object], given: object
) -> None:
    """Each constructor and factory checks its policy up front: a PolicyError at ``policy``
    that says what to pass, not an AttributeError from inside ctxwin at the first call."""
    pytest.importorskip(framework)
    integration = importlib.import_module(f"ctxwin.integrations.{module}")
    with pytest.raises(ctxwin.PolicyError) as caught:
        make(integration, given)
    assert caught.value.key == "policy"
    name = type(given).__name__
    assert caught.value.reason == f"{what} takes a Policy (ctxwin.load_policy(...)), not {name}"


# ------------------------------------------------------------------ pydantic-ai


def test_process_history_among_capabilities_says_where_it_goes() -> None:
    """pydantic-ai calls a function in ``capabilities=[...]`` with the run context to build a
    capability; the processor then says it belongs in ``ProcessHistory(...)``."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    from ctxwin.integrations.pydantic_ai import process_history

    model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")]))
    agent = Agent(model, capabilities=[process_history(_policy())])
    with pytest.raises(ctxwin.InputError) as caught:
        asyncio.run(agent.run("hi"))
    assert str(caught.value) == (
        "process_history(policy) is a history processor, not a capability: pass "
        "capabilities=[ProcessHistory(process_history(policy))], or "
        "capabilities=[ContextWindow(policy)]"
    )


# ------------------------------------------------------------------ LangGraph


@pytest.mark.parametrize(
    ("system", "name"), [({"role": "system", "content": "S"}, "dict"), (42, "int")]
)
def test_a_system_that_is_no_prompt_is_refused_by_pre_model_hook(system: object, name: str) -> None:
    """Refused when the hook is made, at ``system``: not at the first model call, where it
    was reported as ``messages[0]``."""
    pytest.importorskip("langgraph")
    from ctxwin.integrations.langgraph import pre_model_hook

    with pytest.raises(ctxwin.InputError) as caught:
        pre_model_hook(_policy(), system=system)
    assert caught.value.path == "system"
    assert caught.value.reason == (
        f"pre_model_hook takes the agent's prompt as a str or a SystemMessage, not {name}"
    )


NOTHING_LEFT = (
    "messages: nothing is left after repair: the only message was a result of a call that is "
    "not in the request (if the calls live on the provider's side, send previous_response_id "
    "or conversation)"
)


def _repair_graph(policy: ctxwin.Policy) -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph

    from ctxwin.integrations.langgraph import repair_messages

    builder = StateGraph(MessagesState)
    builder.add_node("repair", repair_messages(policy))
    builder.add_edge(START, "repair")
    builder.add_edge("repair", END)
    return builder.compile()


def test_the_repair_node_refuses_to_leave_the_state_empty() -> None:
    """A state of nothing but an orphan result is an InputError, as from Policy.apply: the
    node once answered ``[RemoveMessage(all)]`` alone and wiped the state."""
    pytest.importorskip("langgraph")
    from langchain_core.messages import ToolMessage

    graph = _repair_graph(_policy())
    with pytest.raises(ctxwin.InputError) as caught:
        graph.invoke({"messages": [ToolMessage("r", tool_call_id="zz", id="t")]})
    assert str(caught.value) == NOTHING_LEFT


def test_repaired_messages_refuses_to_leave_nothing() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import ToolMessage

    from ctxwin.integrations.langgraph import repaired_messages

    with pytest.raises(ctxwin.InputError) as caught:
        repaired_messages(_policy(), [ToolMessage("r", tool_call_id="zz")])
    assert str(caught.value) == NOTHING_LEFT


@pytest.mark.parametrize(
    ("state", "found"), [({}, "nothing"), ({"messages": "hi"}, "str"), ({"messages": 3}, "int")]
)
def test_a_state_without_a_list_of_messages_is_an_input_error(
    state: dict[str, Any], found: str
) -> None:
    """At ``messages``, saying what was there (it was a bare TypeError)."""
    pytest.importorskip("langgraph")
    from ctxwin.integrations.langgraph import pre_model_hook

    hook = pre_model_hook(_policy())
    with pytest.raises(ctxwin.InputError) as caught:
        hook.invoke(state)
    assert caught.value.path == "messages"
    assert caught.value.reason == (
        f"the graph state has no list of messages under 'messages' (found {found})"
    )


def test_a_state_holding_a_tuple_of_messages_is_read() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage

    from ctxwin.integrations.langgraph import pre_model_hook

    asked = HumanMessage("hi", id="h")
    out = pre_model_hook(_policy()).invoke({"messages": (asked,)})
    assert out["llm_input_messages"] == [asked]
