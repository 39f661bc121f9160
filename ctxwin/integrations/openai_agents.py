"""ctxwin for the OpenAI Agents SDK (``pip install 'ctxwin[openai-agents]'``).

Edit each model call's input, keep the run's items whole::

    run_config = RunConfig(call_model_input_filter=input_filter(policy))
    result = await Runner.run(agent, "...", run_config=run_config)

The filter gets the SDK's input items (OpenAI Responses items) and the agent's instructions;
it returns them as the policy edits them, counting the agent's function tools toward the
budget. Items ctxwin leaves as they are come back as the very objects the SDK passed (the
SDK ties them to its server-side conversation state by identity).

Server-side conversations (``previous_response_id``, ``conversation_id``,
``auto_previous_response_id=True``): the SDK then sends only the new items, often just the
``function_call_output`` items whose calls live on the server. The filter cannot see the
run's settings, so by default (``server_state=None``) it infers them: under server state the
SDK never sends back what the model produced (calls, assistant messages, reasoning items),
so an input holding none of those and outputs of calls it does not send is taken to answer
calls on the server, and those outputs are kept (``apply(..., server_state=True)``), never
dropped as orphans. An input holding model items is a history kept on the client side: an
output whose call is not in it (a session or a caller that kept only the latest items) is
an orphan, which the policy drops (OpenAI refuses it: "No tool call found for function call
output"). Pass ``server_state=True`` or ``False`` to say it yourself; with ``False`` an input
left with nothing raises :class:`~ctxwin.InputError` rather than going out empty.

Model: the filter counts for the agent's model (``agent.model``, its name or a ``Model``'s
``model``; an agent without one: the SDK's default model). A ``RunConfig.model`` replaces every
agent's model in the SDK, but the filter is not given the ``RunConfig``: pass the same model
to ``input_filter(policy, model=run_config_model)`` (a name or a ``Model``) and it is counted
for, in place of the agent's, as the SDK runs it (its profile: the context window under
``context_window: auto``, the pricing, whether earlier reasoning is read)::

    filt = input_filter(policy, model="gpt-5.6")
    run_config = RunConfig(model="gpt-5.6", call_model_input_filter=filt)

Reasoning: the policy counts the reasoning items of earlier turns as the request's
``reasoning.context`` says the provider reads them (``current_turn``: dropped, ``all_turns``:
read; left out, the model decides: ``gpt-5.6`` reads them all). The filter hands the policy
the agent's ``model_settings.reasoning``, overridden as the SDK overrides it by the run's
settings when it is told them: the SDK gives the filter the agent, not the ``RunConfig``, so
pass ``input_filter(policy, model_settings=run_config_settings)`` when the ``RunConfig``
sets ``model_settings``. Only the policy sees it: the SDK sends its own settings.

Errors: Responses items carry no error flag. An output equal to the SDK's default tool error
text is an error result (never selected away), and so is any output for which
``is_error(call_id, text)`` says so (asked once per output, when it first comes).

Recall: with ``recall`` on in the policy, add the ``recall`` tool to the agent, so the model
can get back what a placeholder or notice quotes a handle for::

    agent = Agent(name="coder", tools=[*tools, recall_tool(policy)])

An error answer (an unknown handle, a bad range) is returned to the model as text that says
so (``recall: unknown handle ...``); the run goes on.

Importing this module needs nothing; the ``ImportError`` saying ``pip install
'ctxwin[openai-agents]'`` comes from the first call of :func:`input_filter` or
:func:`recall_tool` without the SDK.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import Message, Text, ToolCall, ToolResult, is_reasoning_item
from ctxwin._exceptions import InputError
from ctxwin._validate import checked_server_state
from ctxwin.formats import get_adapter
from ctxwin.integrations._earlier import EarlierItems, given_back
from ctxwin.integrations._lazy import require
from ctxwin.integrations._recall import RECALL_DESCRIPTION, RECALL_TOOL, parameters

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result
    from ctxwin.formats._base import ParseState

__all__ = ["SDK_ERROR_TEXT", "InputFilter", "input_filter", "recall_tool"]

_EXTRA = "openai-agents"
_FORMAT = "openai-responses"

SDK_ERROR_TEXT = "An error occurred while running the tool. Please try again."
"""What the SDK's default ``failure_error_function`` tells the model when a tool raises."""
_SDK_ERRORS = frozenset({SDK_ERROR_TEXT, f'{{"error":"{SDK_ERROR_TEXT}"}}'})
"""The SDK's error text, and the JSON object it makes of it for a tool with an output schema
called by a program (``function_tool_error_output``, openai-agents 0.24)."""

ErrorTest = Callable[[str, str], bool]


def input_filter(
    policy: Policy,
    *,
    server_state: bool | None = None,
    is_error: ErrorTest | None = None,
    model_settings: Any = None,
    model: Any = None,
) -> InputFilter:
    """A ``call_model_input_filter`` for ``RunConfig`` that applies ``policy``;
    ``model_settings`` and ``model`` are the ``RunConfig``'s, if it sets them (the filter
    is not given them: see the module's notes on the model and on reasoning). ``model`` (a
    name, or an Agents SDK ``Model``) is counted for in place of each agent's, as the SDK
    runs it; anything else is an :class:`~ctxwin.InputError` at ``model``."""
    policy = checked_policy(policy, "input_filter")
    require("agents", _EXTRA)
    return InputFilter(
        policy,
        server_state=server_state,
        is_error=is_error,
        model_settings=model_settings,
        model=model,
    )


def recall_tool(policy: Policy) -> Any:
    """The ``recall`` tool of ``policy`` as an Agents SDK ``FunctionTool`` (for
    ``Agent(tools=[...])``): it answers with :meth:`ctxwin.Policy.recall_call`, errors as
    text, never raising into the run. On a store that waits on I/O (SQLite, Redis) the
    lookup runs on a worker thread, off the run's event loop."""
    policy = checked_policy(policy, "recall_tool")
    agents = require("agents", _EXTRA)

    async def invoke(context: Any, arguments: str) -> str:
        if policy.shelf.local:
            return policy.recall_call(arguments).text
        return (await asyncio.to_thread(policy.recall_call, arguments)).text

    return agents.FunctionTool(
        name=RECALL_TOOL,
        description=RECALL_DESCRIPTION,
        params_json_schema=parameters(),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # lines and grep are optional
    )


class InputFilter:
    """An async ``call_model_input_filter`` (see :func:`input_filter`).

    ``last_result`` is the :class:`~ctxwin.Result` of the latest model call."""

    def __init__(
        self,
        policy: Policy,
        *,
        server_state: bool | None = None,
        is_error: ErrorTest | None = None,
        model_settings: Any = None,
        model: Any = None,
    ) -> None:
        self.policy = checked_policy(policy, "InputFilter")
        self.server_state = checked_server_state(server_state)
        self.is_error = _checked_is_error(is_error)
        self.model_settings = _checked_settings(model_settings)
        self.model = _checked_model(model)
        """The run's model (``RunConfig.model``), counted for in place of the agent's; None:
        the agent's."""
        self.last_result: Result | None = None
        # the run's history grows by a few items a call: read only those (the whole
        # history, read afresh at each call, cost twenty times the policy's own apply);
        # the SDK rebuilds every item at each turn: equal ones are handed over as the
        # objects of the call before, which the memos know
        self._earlier = EarlierItems()
        self._memo = Memo()
        self._prefix: PrefixCache[ParseState] = PrefixCache()
        self._seen: PrefixCache[_Seen] = PrefixCache()
        self._tools: dict[int, list[dict[str, Any]]] = {}
        self._texts: dict[int, tuple[Any, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()  # runs in threads of their own may share the filter

    async def __call__(self, data: Any) -> Any:
        run_config = require("agents.run_config", _EXTRA)
        model_data = data.model_data
        reasoning = _reasoning(data.agent, self.model_settings)
        with self._lock:
            items, back = self._earlier.known(model_data.input)
            body: dict[str, Any] = {"input": items}
            if model_data.instructions:
                body["instructions"] = model_data.instructions
            if reasoning is not None:  # for the policy to count with: the SDK sends its own
                body["reasoning"] = reasoning
            tools = self._agent_tools(data.agent)
            if tools:
                body["tools"] = tools
            text = self._agent_text(data.agent)
            if text is not None:  # for the policy to count: the SDK sends its own
                body["text"] = text
            errors, orphans = self._read(body)
        state = self.server_state if self.server_state is not None else (orphans or None)
        result = await self.policy.aapply(
            body,
            format=_FORMAT,
            errors=errors,
            server_state=state,
            model=_model_name(data.agent) if self.model is None else _run_model_name(self.model),
        )
        self.last_result = result
        request: Any = result.request
        return run_config.ModelInputData(
            input=given_back(request["input"], back), instructions=model_data.instructions
        )

    def _read(self, body: dict[str, Any]) -> tuple[list[str], bool]:
        """The call ids of error outputs, and whether the body looks like server state: an
        output's call is not in it, and it holds nothing the model produced (which the SDK
        never sends back under server state). Each output is looked at once, when it first
        comes (``is_error`` too)."""
        if not body["input"]:
            return [], False  # ctxwin says what is wrong with an empty input
        messages = get_adapter(_FORMAT).parse(body, self._memo, self._prefix).messages
        found = self._seen.take(messages)
        start, seen = found if found is not None else (0, _Seen())
        for msg in messages[start:]:
            seen.produced = seen.produced or _produced(msg)
            for block in msg.blocks:
                if isinstance(block, ToolCall) and block.id is not None:
                    seen.calls.add(block.id)
                    seen.unanswered.discard(block.id)
                elif isinstance(block, ToolResult) and block.call_id is not None:
                    if block.call_id not in seen.calls:
                        seen.unanswered.add(block.call_id)
                    if not block.is_error and self._failed(block.call_id, block.text):
                        seen.errors.append(block.call_id)
        self._seen.put(messages, seen)
        return list(seen.errors), bool(seen.unanswered) and not seen.produced

    def _failed(self, call_id: str, text: str) -> bool:
        test = self.is_error
        return text in _SDK_ERRORS or (test is not None and test(call_id, text))

    def _agent_tools(self, agent: Any) -> list[dict[str, Any]]:
        """The agent's tools (:func:`_tools`), the very list of the call before while they
        are the same: the policy counts a list it has seen once."""
        tools = _tools(agent)
        known = self._tools.get(id(agent))
        if known == tools:
            return known
        if len(self._tools) >= 64:
            self._tools.clear()
        self._tools[id(agent)] = tools
        return tools

    def _agent_text(self, agent: Any) -> dict[str, Any] | None:
        """The ``text`` the SDK sends for the agent's ``output_type`` (:func:`_text`), built
        once while that type is the same: the policy counts a value it has seen once."""
        output_type = getattr(agent, "output_type", None)
        known = self._texts.get(id(agent))
        if known is not None and known[0] is output_type:
            return known[1]
        if len(self._texts) >= 64:
            self._texts.clear()
        text = _text(output_type)
        self._texts[id(agent)] = (output_type, text)
        return text


def _text(output_type: Any) -> dict[str, Any] | None:
    """The ``text`` (its ``format``: the output's JSON schema) the SDK's Responses model
    sends for an agent's ``output_type`` (its own ``Converter``), None for plain text or a
    type the SDK itself refuses (its error, when it sends)."""
    if output_type is None or output_type is str:
        return None
    agents = require("agents", _EXTRA)
    converter = require("agents.models.openai_responses", _EXTRA).Converter
    try:
        schema = output_type
        if not isinstance(schema, agents.AgentOutputSchemaBase):
            schema = agents.AgentOutputSchema(output_type)
        text = converter.get_response_format(schema)
    except Exception:
        return None
    return dict(text) if isinstance(text, dict) else None


@dataclass
class _Seen:
    """What :meth:`InputFilter._read` found in a history so far (grown with it)."""

    calls: set[str] = field(default_factory=set)
    unanswered: set[str] = field(default_factory=set)
    """Outputs whose call is not in the history (none so far)."""
    errors: list[str] = field(default_factory=list)
    produced: bool = False
    """Whether the history holds an item the model produced (a call, an assistant message's
    text, a reasoning item)."""


def _produced(msg: Message) -> bool:
    """Whether ``msg`` is an item the model produced, which the SDK sends back only in a
    history it keeps itself (not under ``previous_response_id`` or ``conversation_id``)."""
    if msg.role != "assistant":
        return False
    return is_reasoning_item(msg) or any(isinstance(b, ToolCall | Text) for b in msg.blocks)


def _tools(agent: Any) -> list[dict[str, Any]]:
    """The agent's tools and handoffs as the SDK's Responses model sends them (its own
    ``Converter``): counted, never edited. Hosted tools and the ``transfer_to_*`` function
    of each handoff count too; a disabled one is counted all the same (the filter does not
    see the run's context wrapper), so the count errs high, never low. MCP servers' tools
    are not the agent's ``tools`` and are not counted (listing them may take a request)."""
    converter = require("agents.models.openai_responses", _EXTRA).Converter
    sdk = require("agents.handoffs", _EXTRA)
    handoffs = [h if isinstance(h, sdk.Handoff) else sdk.handoff(h) for h in agent.handoffs]
    try:
        converted = converter.convert_tools(list(agent.tools), handoffs)
    except Exception:  # a setup the SDK itself refuses when it sends: its error, not ours
        return _function_tools(agent)
    return [dict(tool) for tool in converted.tools]


def _function_tools(agent: Any) -> list[dict[str, Any]]:
    """The agent's function tools as Responses tool definitions."""
    out = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        if isinstance(schema, dict):
            out.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": getattr(tool, "description", "") or "",
                    "parameters": schema,
                }
            )
    return out


def _checked_is_error(is_error: object) -> ErrorTest | None:
    """``is_error``, when it is a function (or None); else an :class:`~ctxwin.InputError` at
    ``is_error`` (a flag such as ``True`` would fail at the first output, mid-run)."""
    if is_error is None or callable(is_error):
        return is_error
    raise InputError(
        "is_error= takes a function (call_id, text) -> bool saying whether an output is an "
        f"error (or None), not {type(is_error).__name__}",
        path="is_error",
    )


def _checked_settings(settings: Any) -> Any:
    """The run's ``ModelSettings`` (or None), else an :class:`~ctxwin.InputError` at
    ``model_settings``."""
    if settings is None:
        return None
    sdk = require("agents", _EXTRA)
    if not isinstance(settings, sdk.ModelSettings):
        raise InputError(
            "model_settings= takes the RunConfig's ModelSettings (or None), "
            f"not {type(settings).__name__}",
            path="model_settings",
        )
    return settings


def _checked_model(model: Any) -> Any:
    """The run's model: a name (a non-empty str), an Agents SDK ``Model`` or None; else an
    :class:`~ctxwin.InputError` at ``model``."""
    if model is None or (isinstance(model, str) and model):
        return model
    sdk = require("agents", _EXTRA)
    if isinstance(model, sdk.Model):
        return model
    shown = "an empty string" if isinstance(model, str) else type(model).__name__
    raise InputError(
        "model= takes the RunConfig's model: its name (a non-empty str) or an Agents SDK "
        f"Model (or None), not {shown}",
        path="model",
    )


def _run_model_name(model: Any) -> str | None:
    """The name of the run's model (:func:`_checked_model`): a name as given, a ``Model``'s
    ``model`` (``OpenAIResponsesModel``, ``LitellmModel``...); None for a model that names
    none (the policy's own settings then: no profile is claimed for it)."""
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def _reasoning(agent: Any, run_settings: Any) -> dict[str, Any] | None:
    """The reasoning settings the SDK sends with the agent's requests, as a Responses body
    holds them: the run's when it sets them, else the agent's (``ModelSettings.resolve``
    overlays the run's fields that are not None on the agent's); None when neither does."""
    reasoning = getattr(run_settings, "reasoning", None)
    if reasoning is None:
        reasoning = getattr(getattr(agent, "model_settings", None), "reasoning", None)
    if isinstance(reasoning, Mapping):
        return dict(reasoning)
    dump = getattr(reasoning, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else None


def _model_name(agent: Any) -> str | None:
    """The agent's model name: its own, else the SDK's default model, which the SDK runs an
    agent without one on (``OPENAI_DEFAULT_MODEL``; a ``RunConfig.model`` is not seen: it
    is passed as ``input_filter(model=...)``)."""
    model = getattr(agent, "model", None)
    if model is None or model == "":
        default = require("agents.models", _EXTRA).get_default_model()
        return default if isinstance(default, str) and default else None
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None
