"""ctxwin for LiteLLM (``pip install 'ctxwin[litellm]'``), on the proxy and in-process.

On the proxy (``config.yaml``: ``litellm_settings: callbacks: my_hooks.ctxwin_hook``)::

    ctxwin_hook = CtxwinHook(ctxwin.load_policy("policy"))

``async_pre_call_hook`` edits each request's ``messages`` (OpenAI chat format) before the
proxy routes it. In-process, add the same hook to ``litellm.callbacks``: LiteLLM 1.110 runs
``async_pre_call_deployment_hook`` for ``litellm.acompletion`` (and the ``Router``), which
the hook implements too. Plain ``litellm.completion`` runs no hook that may edit the
request; call ``litellm.completion(**hook.edit(kwargs))`` there.

``messages`` may be a list or a tuple. Dict messages ctxwin leaves as they are go out as
the very dicts given; LiteLLM ``Message`` objects (what ``response.choices[0].message`` is)
are read through their ``model_dump`` and go out as plain dicts, edited or not; edited
messages are new dicts. The request given is never modified.

A request the hook already edited (the proxy's, when it reaches the deployment hook) is not
edited twice: the hook remembers what the messages of each request it edited hold (their
content, not the list object, which LiteLLM's Router rebuilds on the way), and a request
whose messages hold exactly that goes on as it is, ``last_result`` left as the first pass
set it (ctxwin applied to its own output changes nothing, so that is what a second pass
would send). A new request built from an edited list (a message appended, one changed)
holds something else and is edited as any other; one that sends an edited list again
unchanged goes as it is.

Recall: with ``recall`` on in the policy, give the model the ``recall`` tool and answer its
calls in your loop with :meth:`ctxwin.Policy.recall_result`::

    tools = [*tools, policy.recall_tool("openai-chat")]
    ...
    if call.function.name == "recall":
        history.append(policy.recall_result(call.id, call.function.arguments, "openai-chat"))

``CtxwinHook(policy, add_recall_tool=True)`` adds the tool's definition to each request's
``tools`` (when recall is on and the request has no ``recall`` tool yet); answering the
calls stays the loop's part.

Importing this module needs nothing; the ``ImportError`` saying ``pip install
'ctxwin[litellm]'`` comes from the first ``CtxwinHook(...)`` without LiteLLM.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._exceptions import InputError
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
    policy = checked_policy(policy, "CtxwinHook")
    return _hook_class()(policy, add_recall_tool=add_recall_tool)


def _tool_name(tool: object) -> object:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else tool.get("name")


def _with_recall(data: Mapping[str, Any], policy: Policy) -> Mapping[str, Any]:
    """``data`` with the recall tool added to its tools, unless it has it already (a request
    the proxy's hook edited); a tool of the user's own named ``recall`` is refused: the
    model's recall calls would reach it, and two tools of one name are a 400."""
    tools = list(data.get("tools") or ())
    ours = policy.recall_tool(_FORMAT)
    named = [t for t in tools if _tool_name(t) == RECALL_TOOL]
    if named and all(t == ours for t in named):
        return data
    if named:
        raise InputError(
            "the request has a tool named 'recall' of its own: the model's recall calls "
            "would reach it, not ctxwin's. Rename yours, or pass "
            "CtxwinHook(policy, add_recall_tool=False) and answer recall yourself",
            path="tools",
        )
    return {**data, "tools": [*tools, ours]}


def _body(data: Mapping[str, Any], messages: Sequence[Any]) -> tuple[dict[str, Any], str | None]:
    body: dict[str, Any] = {"messages": list(messages)}
    if data.get("tools"):
        body["tools"] = data["tools"]
    model = data.get("model")
    # "anthropic/claude-sonnet-4-5" is the model "claude-sonnet-4-5" of a provider
    name = model.rsplit("/", 1)[-1] if isinstance(model, str) and model else None
    return body, name


_CHAT_CALLS = frozenset({"completion", "acompletion"})


def _messages(data: object, call_type: object = None) -> Sequence[Any] | None:
    """The messages of a chat request (a list or a tuple), ``None`` for a request the hook
    leaves alone (no messages; ``anthropic_messages`` calls carry Anthropic messages), and
    an :class:`~ctxwin.InputError` for messages of another type."""
    kind = getattr(call_type, "value", call_type)
    if kind is not None and kind not in _CHAT_CALLS:
        return None
    messages = data.get("messages") if isinstance(data, Mapping) else None
    if messages is None or isinstance(messages, (list, tuple)):
        return messages
    raise InputError(
        f"a list or tuple of chat messages, not {type(messages).__name__}", path="messages"
    )


def _plain(value: object) -> object:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else repr(value)


def _key(messages: Sequence[Any]) -> tuple[int, str] | None:
    """What ``messages`` hold, as a key that LiteLLM's copies of them share (``None`` for
    messages that cannot be written as JSON)."""
    try:
        text = json.dumps(list(messages), sort_keys=True, default=_plain)
    except (TypeError, ValueError, RecursionError):
        return None
    digest = hashlib.blake2b(text.encode(), digest_size=16)
    return len(messages), digest.hexdigest()


class _Sent:
    """The requests a hook has edited, by what their messages hold (the latest ones)."""

    def __init__(self) -> None:
        self._keys: dict[tuple[int, str], None] = {}

    def add(self, messages: Sequence[Any]) -> None:
        key = _key(messages)
        if key is None:
            return
        if len(self._keys) >= _REMEMBER:
            self._keys.pop(next(iter(self._keys)))
        self._keys[key] = None

    def __contains__(self, messages: Sequence[Any]) -> bool:
        if not any(n == len(messages) for n, _ in self._keys):
            return False  # most requests: no JSON written
        return _key(messages) in self._keys


@functools.cache
def _hook_class() -> type:
    custom_logger = require("litellm.integrations.custom_logger", _EXTRA)

    class CtxwinHook(custom_logger.CustomLogger):  # type: ignore[misc, name-defined]
        """Edits each chat request's messages with a ctxwin policy."""

        def __init__(self, policy: Policy, *, add_recall_tool: bool = False) -> None:
            super().__init__()
            self.policy = checked_policy(policy, "CtxwinHook")
            self.add_recall_tool = add_recall_tool
            self.last_result: Any = None
            self._sent = _Sent()

        def edit(self, data: Mapping[str, Any]) -> dict[str, Any]:
            """``data`` (completion kwargs) with its messages edited (synchronously)."""
            messages = _messages(data)
            if messages is None:
                return dict(data)
            data = self._tools(data)
            body, model = _body(data, messages)
            return self._done(data, self.policy.apply(body, format=_FORMAT, model=model))

        async def aedit(self, data: Mapping[str, Any]) -> dict[str, Any]:
            """Like :meth:`edit`, with ``policy.aapply`` (async summarizers)."""
            messages = _messages(data)
            if messages is None:
                return dict(data)
            data = self._tools(data)
            body, model = _body(data, messages)
            result = await self.policy.aapply(body, format=_FORMAT, model=model)
            return self._done(data, result)

        def _tools(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
            if self.add_recall_tool and recall_on(self.policy):
                return _with_recall(data, self.policy)
            return data

        def _done(self, data: Mapping[str, Any], result: Any) -> dict[str, Any]:
            self.last_result = result
            messages = list(result.request["messages"])
            self._sent.add(messages)
            return {**data, "messages": messages}

        def _managed(self, data: Mapping[str, Any], call_type: Any) -> bool:
            """Whether the hook edits ``data``: a chat request it has not edited already."""
            messages = _messages(data, call_type)
            return messages is not None and messages not in self._sent

        async def async_pre_call_hook(
            self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
        ) -> dict[str, Any]:
            if not self._managed(data, call_type):
                return data
            return await self.aedit(data)

        async def async_pre_call_deployment_hook(
            self, kwargs: dict[str, Any], call_type: Any
        ) -> dict[str, Any] | None:
            if not self._managed(kwargs, call_type):
                return None
            return await self.aedit(kwargs)

    CtxwinHook.__module__ = __name__
    return CtxwinHook
