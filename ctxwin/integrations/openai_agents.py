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
run's settings, so by default (``server_state=None``) it infers them: the SDK sends the whole
history otherwise, so outputs of calls it does not send are outputs of calls on the server,
and they are kept (``apply(..., server_state=True)``), never dropped as orphans. Pass
``server_state=True`` or ``False`` to say it yourself; with ``False`` an input left with
nothing raises :class:`~ctxwin.InputError` rather than going out empty.

Errors: Responses items carry no error flag. An output equal to the SDK's default tool error
text is an error result (never selected away), and so is any output for which
``is_error(call_id, text)`` says so.

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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._core.model import ToolCall, ToolResult
from ctxwin._validate import parse
from ctxwin.integrations._lazy import require
from ctxwin.integrations._recall import RECALL_DESCRIPTION, RECALL_TOOL, parameters

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result

__all__ = ["SDK_ERROR_TEXT", "InputFilter", "input_filter", "recall_tool"]

_EXTRA = "openai-agents"
_FORMAT = "openai-responses"

SDK_ERROR_TEXT = "An error occurred while running the tool. Please try again."
"""What the SDK's default ``failure_error_function`` tells the model when a tool raises."""

ErrorTest = Callable[[str, str], bool]


def input_filter(
    policy: Policy,
    *,
    server_state: bool | None = None,
    is_error: ErrorTest | None = None,
) -> InputFilter:
    """A ``call_model_input_filter`` for ``RunConfig`` that applies ``policy``."""
    policy = checked_policy(policy, "input_filter")
    require("agents", _EXTRA)
    return InputFilter(policy, server_state=server_state, is_error=is_error)


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
    ) -> None:
        self.policy = checked_policy(policy, "InputFilter")
        self.server_state = server_state
        self.is_error = is_error
        self.last_result: Result | None = None

    async def __call__(self, data: Any) -> Any:
        run_config = require("agents.run_config", _EXTRA)
        model_data = data.model_data
        body: dict[str, Any] = {"input": list(model_data.input)}
        if model_data.instructions:
            body["instructions"] = model_data.instructions
        tools = _tools(data.agent)
        if tools:
            body["tools"] = tools
        errors, orphans = self._read(body)
        state = self.server_state if self.server_state is not None else (orphans or None)
        result = await self.policy.aapply(
            body,
            format=_FORMAT,
            errors=errors,
            server_state=state,
            model=_model_name(data.agent),
        )
        self.last_result = result
        request: Any = result.request
        return run_config.ModelInputData(
            input=list(request["input"]), instructions=model_data.instructions
        )

    def _read(self, body: dict[str, Any]) -> tuple[list[str], bool]:
        """The call ids of error outputs, and whether some output's call is not in the body."""
        if not body["input"]:
            return [], False  # ctxwin says what is wrong with an empty input
        results, calls = [], set()
        for block in _blocks(body):
            if isinstance(block, ToolCall) and block.id is not None:
                calls.add(block.id)
            elif isinstance(block, ToolResult) and block.call_id is not None:
                results.append(block)
        errors = [
            r.call_id
            for r in results
            if r.call_id is not None
            and not r.is_error
            and (r.text == SDK_ERROR_TEXT or (self.is_error and self.is_error(r.call_id, r.text)))
        ]
        return errors, any(r.call_id not in calls for r in results)


def _blocks(body: dict[str, Any]) -> Iterator[object]:
    for msg in parse(body, _FORMAT).messages:
        yield from msg.blocks


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


def _model_name(agent: Any) -> str | None:
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None
