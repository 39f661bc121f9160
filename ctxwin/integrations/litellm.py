"""ctxwin for LiteLLM (``pip install 'ctxwin[litellm]'``), on the proxy and in-process.

On the proxy (``config.yaml``: ``litellm_settings: callbacks: my_hooks.ctxwin_hook``)::

    ctxwin_hook = CtxwinHook(ctxwin.load_policy("policy"))

``async_pre_call_hook`` edits each request's ``messages`` (OpenAI chat format) before the
proxy routes it. In-process, add the same hook to ``litellm.callbacks``: LiteLLM 1.110 runs
``async_pre_call_deployment_hook`` for ``litellm.acompletion`` (and the ``Router``), which
the hook implements too. Plain ``litellm.completion`` runs no hook that may edit the
request; call ``litellm.completion(**hook.edit(kwargs))`` there.

LiteLLM ``Message`` objects (what ``response.choices[0].message`` is) are read through their
``model_dump``; messages ctxwin leaves as they are go out as the very objects given, edited
ones as plain dicts. A request the hook already edited (the proxy's, when it reaches the
deployment hook) is not edited twice.

Recall: with ``recall`` on in the policy, give the model the ``recall`` tool and answer its
calls in your loop with :meth:`ctxwin.Policy.recall_result`::

    tools = [*tools, policy.recall_tool("openai-chat")]
    ...
    if call.function.name == "recall":
        history.append(policy.recall_result(call.id, call.function.arguments, "openai-chat"))

``CtxwinHook(policy, add_recall_tool=True)`` adds the tool's definition to each request's
``tools`` (when recall is on and the request has no ``recall`` tool yet); answering the
calls stays the loop's part.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxwin.integrations._lazy import require
from ctxwin.integrations._recall import RECALL_TOOL, recall_on

if TYPE_CHECKING:
    from ctxwin._engine import Policy

__all__ = ["CtxwinHook"]

_EXTRA = "litellm"
_FORMAT = "openai-chat"
_REMEMBER = 256


def CtxwinHook(policy: Policy, *, add_recall_tool: bool = False) -> Any:  # made on first use
    """A LiteLLM ``CustomLogger`` that edits each chat request's messages with ``policy``.

    ``add_recall_tool=True`` adds the ``recall`` tool to each request's tools when the policy
    has recall on. Its ``last_result`` is the :class:`~ctxwin.Result` of the latest request."""
    return _hook_class()(policy, add_recall_tool=add_recall_tool)


def _tool_name(tool: object) -> object:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else tool.get("name")


def _with_recall(data: Mapping[str, Any], policy: Policy) -> Mapping[str, Any]:
    """``data`` with the recall tool added to its tools, unless it has one already."""
    tools = list(data.get("tools") or ())
    if any(_tool_name(t) == RECALL_TOOL for t in tools):
        return data
    return {**data, "tools": [*tools, policy.recall_tool(_FORMAT)]}


def _body(data: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    body: dict[str, Any] = {"messages": data["messages"]}
    if data.get("tools"):
        body["tools"] = data["tools"]
    model = data.get("model")
    # "anthropic/claude-sonnet-4-5" is the model "claude-sonnet-4-5" of a provider
    name = model.rsplit("/", 1)[-1] if isinstance(model, str) and model else None
    return body, name


_CHAT_CALLS = frozenset({"completion", "acompletion"})


def _has_messages(data: object, call_type: object = None) -> bool:
    """A chat request (``anthropic_messages`` calls carry Anthropic messages: left alone)."""
    kind = getattr(call_type, "value", call_type)
    if kind is not None and kind not in _CHAT_CALLS:
        return False
    return isinstance(data, Mapping) and isinstance(data.get("messages"), list)


@functools.cache
def _hook_class() -> type:
    custom_logger = require("litellm.integrations.custom_logger", _EXTRA)

    class CtxwinHook(custom_logger.CustomLogger):  # type: ignore[misc, name-defined]
        """Edits each chat request's messages with a ctxwin policy."""

        def __init__(self, policy: Policy, *, add_recall_tool: bool = False) -> None:
            super().__init__()
            self.policy = policy
            self.add_recall_tool = add_recall_tool
            self.last_result: Any = None
            self._sent: dict[int, list[Any]] = {}

        def edit(self, data: Mapping[str, Any]) -> dict[str, Any]:
            """``data`` (completion kwargs) with its messages edited (synchronously)."""
            if not _has_messages(data):
                return dict(data)
            data = self._tools(data)
            body, model = _body(data)
            return self._done(data, self.policy.apply(body, format=_FORMAT, model=model))

        async def aedit(self, data: Mapping[str, Any]) -> dict[str, Any]:
            """Like :meth:`edit`, with ``policy.aapply`` (async summarizers)."""
            if not _has_messages(data):
                return dict(data)
            data = self._tools(data)
            body, model = _body(data)
            result = await self.policy.aapply(body, format=_FORMAT, model=model)
            return self._done(data, result)

        def _tools(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
            if self.add_recall_tool and recall_on(self.policy):
                return _with_recall(data, self.policy)
            return data

        def _done(self, data: Mapping[str, Any], result: Any) -> dict[str, Any]:
            self.last_result = result
            messages = list(result.request["messages"])
            if len(self._sent) >= _REMEMBER:
                self._sent.pop(next(iter(self._sent)))
            self._sent[id(messages)] = messages
            return {**data, "messages": messages}

        def _edited_already(self, data: Mapping[str, Any]) -> bool:
            messages = data.get("messages")
            return self._sent.get(id(messages)) is messages

        async def async_pre_call_hook(
            self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
        ) -> dict[str, Any]:
            if not _has_messages(data, call_type) or self._edited_already(data):
                return data
            return await self.aedit(data)

        async def async_pre_call_deployment_hook(
            self, kwargs: dict[str, Any], call_type: Any
        ) -> dict[str, Any] | None:
            if not _has_messages(kwargs, call_type) or self._edited_already(kwargs):
                return None
            return await self.aedit(kwargs)

    CtxwinHook.__module__ = __name__
    return CtxwinHook
