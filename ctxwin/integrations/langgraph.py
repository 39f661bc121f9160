"""LangGraph: ctxwin before the model of a prebuilt agent, and repair of a graph's messages.

For LangGraph's prebuilt agents (``create_react_agent``)::

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(policy))

The hook returns ``{"llm_input_messages": ...}``: the model gets the edited request, the
graph's state keeps every message.

For a ``StateGraph`` of your own, where a human can decline a tool call through
``interrupt()`` / ``Command(resume=...)`` and the graph goes on with a human message instead
of the call's result, :func:`repair_messages` is a node that puts the missing results in
the state, with the policy's text (``repair: {missing_result: "{tool} was declined by the
user"}``), before the human message, so every later request is valid as it stands::

    graph.add_node("repair", repair_messages(policy))

Recall: with ``recall`` on in the policy, give the agent the ``recall`` tool too, so the
model can get back what a placeholder quotes a handle for::

    agent = create_react_agent(
        model, [*tools, recall_tool(policy)], pre_model_hook=pre_model_hook(policy)
    )

Needs ``pip install 'ctxwin[langgraph]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxwin.integrations._lazy import require
from ctxwin.integrations._lc import LangChainRun, recall_tool

if TYPE_CHECKING:
    from ctxwin._engine import Policy

__all__ = ["pre_model_hook", "recall_tool", "repair_messages", "repaired_messages"]


def _messages_of(state: object, key: str) -> list[Any]:
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if not isinstance(value, list):
        raise TypeError(f"the graph state has no list of messages under {key!r}")
    return value


def pre_model_hook(
    policy: Policy, *, system: str | object | None = None, model: str | None = None
) -> Any:
    """A ``pre_model_hook`` for LangGraph's prebuilt agents: ``{"llm_input_messages":
    edited}``, the state untouched.

    ``system`` is the agent's ``prompt`` (a string or a ``SystemMessage``), counted toward
    the budget and left for the agent to add; ``model`` names the model for its profile
    (``context_window: auto``). Runs ``aapply`` when the graph runs async.
    """
    runnables = require("langchain_core.runnables", "langgraph")
    run = LangChainRun(policy)
    if isinstance(system, str):
        system = require("langchain_core.messages", "langgraph").SystemMessage(content=system)

    def hook(state: object) -> dict[str, Any]:
        chat = run.body(_messages_of(state, "messages"), system)
        edited = run.back(chat, run.apply(chat, model))
        return {"llm_input_messages": edited.messages}

    async def ahook(state: object) -> dict[str, Any]:
        chat = run.body(_messages_of(state, "messages"), system)
        edited = run.back(chat, await run.aapply(chat, model))
        return {"llm_input_messages": edited.messages}

    return runnables.RunnableLambda(hook, afunc=ahook, name="ctxwin_pre_model_hook")


def repaired_messages(policy: Policy, messages: Sequence[object]) -> list[Any]:
    """``messages`` with their tool pairing repaired as a provider requires: a synthetic
    error ``ToolMessage`` (the policy's ``repair.missing_result`` text) for each call that
    has no result, results moved right after their call, orphans dropped. The very same
    message objects wherever nothing needed repair."""
    return LangChainRun(policy).repaired(messages)[0]


def repair_messages(policy: Policy, *, key: str = "messages") -> Callable[[object], dict[str, Any]]:
    """A ``StateGraph`` node that repairs the messages under ``key`` (see
    :func:`repaired_messages`): it returns no update when they are valid, and otherwise
    replaces them all (``RemoveMessage(REMOVE_ALL_MESSAGES)`` then the repaired list), so
    the synthetic results stand where the provider wants them.

    Put it on the way into the model node, after a node that may ``interrupt()``.
    """
    run = LangChainRun(policy)
    messages_mod = require("langchain_core.messages", "langgraph")
    remove_all = require("langgraph.graph.message", "langgraph").REMOVE_ALL_MESSAGES

    def repair(state: object) -> dict[str, Any]:
        fixed, fixes = run.repaired(_messages_of(state, key))
        if not fixes:
            return {}
        return {key: [messages_mod.RemoveMessage(id=remove_all), *fixed]}

    return repair
