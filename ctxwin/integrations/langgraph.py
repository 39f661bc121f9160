"""LangGraph: ctxwin before the model of a prebuilt agent, and repair of a graph's messages.

For LangGraph's prebuilt agents (``create_react_agent``)::

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(policy))

The hook returns ``{"llm_input_messages": ...}``: the model gets the edited request, the
graph's state keeps every message. LangGraph 1.x deprecates ``create_react_agent`` for
LangChain's ``langchain.agents.create_agent``, which takes no ``pre_model_hook``: give that
one :class:`ctxwin.integrations.langchain.CtxwinMiddleware` instead.

Not edited: with a ``response_format``, the prebuilt agent's last model call (its
``generate_structured_response`` step) reads the state's ``messages``, not the hook's
``llm_input_messages``, so it gets the whole history unedited (every tool result in full,
past the policy's caps and window). For structured output use ``create_agent`` with
``CtxwinMiddleware``, whose structured response comes from a model call that goes through
its ``wrap_model_call``.

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

Needs ``pip install 'ctxwin[langgraph]'`` (:func:`repaired_messages` and
:func:`recall_tool` need only its ``langchain-core``). Importing this module needs nothing:
the ``ImportError`` saying what to install comes from the first call of
:func:`pre_model_hook`, :func:`repair_messages`, :func:`repaired_messages` or
:func:`recall_tool`, and names this module's extra, ``ctxwin[langgraph]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._core.check import nothing_left
from ctxwin._entry import checked_model
from ctxwin._exceptions import InputError
from ctxwin.integrations._lazy import require
from ctxwin.integrations._lc import LangChainRun
from ctxwin.integrations._lc import recall_tool as _recall_tool

if TYPE_CHECKING:
    from ctxwin._engine import Policy

__all__ = ["pre_model_hook", "recall_tool", "repair_messages", "repaired_messages"]


def _messages_of(state: object, key: str) -> list[Any]:
    """The messages under ``key`` of a graph state (a list or a tuple), or an
    :class:`ctxwin.InputError` at ``key``."""
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if isinstance(value, tuple):
        return list(value)
    if not isinstance(value, list):
        raise InputError(
            f"the graph state has no list of messages under {key!r} (found "
            f"{'nothing' if value is None else type(value).__name__})",
            path=key,
        )
    return value


def _system_message(system: object) -> Any:
    """The agent's prompt as a ``SystemMessage`` (``None`` when there is none), or an
    :class:`ctxwin.InputError` at ``system`` for anything else."""
    if system is None:
        return None
    messages = require("langchain_core.messages", "langgraph")
    if isinstance(system, str):
        return messages.SystemMessage(content=system)
    if isinstance(system, messages.SystemMessage):
        return system
    raise InputError(
        "pre_model_hook takes the agent's prompt as a str or a SystemMessage, "
        f"not {type(system).__name__}",
        path="system",
    )


def _run(policy: object, what: str) -> LangChainRun:
    """A run of ``policy`` for ``what``: the policy checked first, then ``langchain-core``
    found (else the ``ImportError`` names this module's extra, not ``ctxwin[langchain]``)."""
    checked = checked_policy(policy, what)
    require("langchain_core.messages", "langgraph")
    return LangChainRun(checked)


def _repaired(
    run: LangChainRun, messages: Sequence[object], key: str, model: str | None
) -> tuple[list[Any], bool]:
    """``messages`` repaired, and whether anything was; an :class:`ctxwin.InputError` when
    nothing is left (every message a result of a call that is not there), as
    :meth:`ctxwin.Policy.apply` says it."""
    fixed, fixes = run.repaired(messages, model)
    if messages and not fixed:
        raise InputError(nothing_left(len(messages), fixes), path=key)
    return fixed, bool(fixes)


def pre_model_hook(
    policy: Policy, *, system: str | object | None = None, model: str | None = None
) -> Any:
    """A ``pre_model_hook`` for LangGraph's prebuilt agents: ``{"llm_input_messages":
    edited}``, the state untouched.

    ``system`` is the agent's ``prompt`` (a string or a ``SystemMessage``; anything else is
    an :class:`ctxwin.InputError` here), counted toward the budget and left for the agent to
    add; ``model`` names the model for its profile (``context_window: auto``; anything
    but a non-empty str or None is an :class:`ctxwin.InputError` here). Runs ``aapply``
    when the graph runs async. The structured-response call of an agent made with a
    ``response_format`` does not go through the hook (see the module).
    """
    policy = checked_policy(policy, "pre_model_hook")
    model = checked_model(model)
    runnables = require("langchain_core.runnables", "langgraph")
    system = _system_message(system)
    run = LangChainRun(policy)

    def hook(state: object) -> dict[str, Any]:
        chat = run.body(_messages_of(state, "messages"), system)
        edited = run.back(chat, run.apply(chat, model))
        return {"llm_input_messages": edited.messages}

    async def ahook(state: object) -> dict[str, Any]:
        chat = run.body(_messages_of(state, "messages"), system)
        edited = run.back(chat, await run.aapply(chat, model))
        return {"llm_input_messages": edited.messages}

    return runnables.RunnableLambda(hook, afunc=ahook, name="ctxwin_pre_model_hook")


def repaired_messages(
    policy: Policy, messages: Sequence[object], *, model: str | None = None
) -> list[Any]:
    """``messages`` with their tool pairing repaired as a provider requires: a synthetic
    error ``ToolMessage`` (the policy's ``repair.missing_result`` text) for each call that
    has no result, results moved right after their call, orphans dropped. The very same
    message objects wherever nothing needed repair. Messages that are all results of calls
    not among them leave nothing to send: an :class:`ctxwin.InputError`, as from
    :meth:`ctxwin.Policy.apply`.

    ``model`` names the model the messages go to: for a Claude model (``ChatAnthropic``'s
    ``claude-...``, LiteLLM's ``anthropic/claude-...``), a call id used in two turns
    (``call_0`` again) is renamed, as Anthropic refuses it where OpenAI does not."""
    model = checked_model(model)
    return _repaired(_run(policy, "repaired_messages"), messages, "messages", model)[0]


def repair_messages(
    policy: Policy, *, key: str = "messages", model: str | None = None
) -> Callable[[object], dict[str, Any]]:
    """A ``StateGraph`` node that repairs the messages under ``key`` (see
    :func:`repaired_messages`, and its ``model``): it returns no update when they are
    valid, and otherwise replaces them all (``RemoveMessage(REMOVE_ALL_MESSAGES)`` then the
    repaired list), so the synthetic results stand where the provider wants them. Messages
    that would all be dropped (results of calls that are not there) raise
    :class:`ctxwin.InputError` rather than wipe the state, and a ``ToolMessage`` answering
    a call an earlier AI message holds in a content block ctxwin reads no call from raises
    :class:`ctxwin.FormatError` at that block rather than be deleted.

    Put it on the way into the model node, after a node that may ``interrupt()``.
    """
    model = checked_model(model)
    run = _run(policy, "repair_messages")
    messages_mod = require("langchain_core.messages", "langgraph")
    remove_all = require("langgraph.graph.message", "langgraph").REMOVE_ALL_MESSAGES

    def repair(state: object) -> dict[str, Any]:
        fixed, changed = _repaired(run, _messages_of(state, key), key, model)
        if not changed:
            return {}
        return {key: [messages_mod.RemoveMessage(id=remove_all), *fixed]}

    return repair


def recall_tool(policy: Policy) -> Any:
    """The ``recall`` tool of ``policy`` as a LangChain ``StructuredTool`` (see
    :func:`ctxwin.integrations.langchain.recall_tool`): give it to the agent with its other
    tools when the policy's ``recall`` is on."""
    checked = checked_policy(policy, "recall_tool")
    require("langchain_core.tools", "langgraph")
    return _recall_tool(checked)
