"""LangChain 1.x: ctxwin as agent middleware for ``create_agent``.

```python
policy = ctxwin.load_policy("policy")
agent = create_agent(model, tools, middleware=[CtxwinMiddleware(policy)])
```

Before each model call the middleware applies the policy to the request — the system
message, the tools and the structured-output schema count toward the budget (see
:mod:`~ctxwin.integrations._lc_output`) — and hands the model the edited request
(``request.override(messages=..., system_message=...)``). The agent's state keeps the full
history: the next call starts from it again, and what ctxwin decided before is decided the
same way, so the prompt's prefix stays what the provider cached.

Messages ctxwin does not change are the very objects in the state; an edited one is a copy
with only the edited content replaced (its id, name, ``status``, artifact, metadata, images
and ``cache_control`` kept). A ``ToolMessage`` with ``status="error"`` is an error result:
never selected away or summarized, only capped. When the model reports ``usage_metadata``,
the policy learns from it (:meth:`ctxwin.Policy.observe`), from the first pass of a Claude
turn that ran a server-side tool where Anthropic lists them, else not at all (see
:func:`~ctxwin.integrations._lc.usage_of`).

Recall: when the policy has ``recall`` on, the middleware registers the ``recall`` tool with
the agent (``middleware.tools``), so the model can get back what a placeholder or notice
quotes a handle for; nothing else to write. :func:`recall_tool` is that tool on its own
(for LangGraph's prebuilt agents, or an agent built without the middleware).

Needs ``pip install 'ctxwin[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._exceptions import InputError
from ctxwin.integrations._lazy import require
from ctxwin.integrations._lc import (
    Edited,
    LangChainRun,
    foreign_recall,
    model_name,
    recall_tool,
    usage_of,
)
from ctxwin.integrations._lc_output import StructuredOutput
from ctxwin.integrations._recall import recall_on

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result
    from ctxwin.formats.langchain import ChatBody

__all__ = ["CtxwinMiddleware", "recall_tool"]

_AgentMiddleware: Any = require("langchain.agents.middleware", "langchain").AgentMiddleware


class CtxwinMiddleware(_AgentMiddleware):  # type: ignore[misc]
    """Applies a :class:`ctxwin.Policy` to each model request of a LangChain agent.

    ``observe=False`` stops feeding the model's reported usage back to the policy.
    With recall on, ``tools`` holds the ``recall`` tool, which the agent registers;
    ``register_recall=False`` leaves it out (to pass :func:`recall_tool` yourself).
    ``last_result`` is the :class:`ctxwin.Result` of the latest request (its ``report``
    says where the tokens went).
    """

    def __init__(
        self, policy: Policy, *, observe: bool = True, register_recall: bool = True
    ) -> None:
        policy = checked_policy(policy, "CtxwinMiddleware")
        super().__init__()
        self.policy = policy
        self.tools = [recall_tool(policy)] if register_recall and recall_on(policy) else []
        self.observe = observe
        self.last_result: Result | None = None
        self._run = LangChainRun(policy)
        self._structured = StructuredOutput()

    def _chat(self, request: Any) -> tuple[ChatBody, str | None]:
        if self.tools and foreign_recall(request.tools or ()):
            raise InputError(
                "the agent has a tool named 'recall' of its own, and LangChain runs one tool of "
                "a name: the model's recall calls would reach it, not ctxwin's. Rename yours, "
                "or pass CtxwinMiddleware(policy, register_recall=False) to keep it",
                path="tools",
            )
        tools, response_format = self._structured.of(request)
        chat = self._run.body(
            request.messages, request.system_message, [*request.tools, *tools], response_format
        )
        return chat, model_name(request.model)

    def _edited(self, request: Any, chat: ChatBody, result: Result) -> Any:
        self.last_result = result
        edited: Edited = self._run.back(chat, result)
        if not edited.changed:
            return request
        return request.override(messages=edited.messages, system_message=edited.system)

    def _observe(self, result: Result, response: object) -> None:
        if not self.observe:
            return
        usage = usage_of(response)
        if usage is not None:
            self.policy.observe(result, usage)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """The model call, on the request as the policy edits it."""
        chat, model = self._chat(request)
        result = self._run.apply(chat, model)
        response = handler(self._edited(request, chat, result))
        self._observe(result, response)
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """The async model call, on the request as the policy edits it (``aapply``)."""
        chat, model = self._chat(request)
        result = await self._run.aapply(chat, model)
        response = await handler(self._edited(request, chat, result))
        self._observe(result, response)
        return response
