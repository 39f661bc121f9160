"""ctxwin for LiteLLM (``pip install 'ctxwin[litellm]'``), on the proxy and in-process.

On the proxy (``config.yaml``: ``litellm_settings: callbacks: my_hooks.ctxwin_hook``)::

    ctxwin_hook = CtxwinHook(ctxwin.load_policy("policy"))

The hook edits a chat request's ``messages`` (OpenAI Chat), a Responses request's ``input``
(``/v1/responses``, OpenAI Responses; an ``input`` that is one string is left as it is) and
an Anthropic Messages request's ``messages`` (``/v1/messages``, Anthropic, its ``system``
counted), for the model the request goes to (its profile gives ``context_window: auto``,
the pricing and the breakpoints). On the proxy a request names a model group (``model:
my-claude``); the Router picks the deployment after ``async_pre_call_hook``, and hands
``async_pre_call_deployment_hook`` its ``litellm_params`` (``model:
anthropic/claude-sonnet-4-5``, ``bedrock/...``) and ``model_info``: the model is the
deployment's ``base_model`` when ctxwin has its profile, else its ``model``. So
``async_pre_call_hook`` edits a request before the proxy routes it when it knows where it
goes: its group's deployments seen before, all for one model, or a group named as a model
ctxwin has a profile for; it leaves the others to the deployment hook (the first request of
a group, a group whose deployments are different models). Under ``cache_breakpoints: auto``
a chat request LiteLLM sends to Anthropic (``anthropic/``, Bedrock, Vertex AI and Azure AI
Claude, OpenRouter) gets Anthropic's ``cache_control`` on its content parts, which LiteLLM
makes the Anthropic request's breakpoints, four at most with those of its system messages,
its tools and a top-level ``cache_control``; one LiteLLM sends to an OpenAI-compatible
endpoint gets none. In-process,
add the same hook to ``litellm.callbacks``: LiteLLM 1.110 runs
``async_pre_call_deployment_hook`` for ``litellm.acompletion``, ``litellm.responses`` /
``aresponses`` and ``litellm.anthropic_messages`` (and the ``Router``'s), which the hook
implements too. Plain ``litellm.completion`` runs no hook that may edit the request; call
``litellm.completion(**hook.edit(kwargs))`` there.

The items may be a list or a tuple. Dict items ctxwin leaves as they are go out as the very
dicts given; LiteLLM ``Message`` objects (what ``response.choices[0].message`` is) are read
through their ``model_dump`` and go out as plain dicts, edited or not; edited items are new
dicts. The request given is never modified.

A request the hook already edited (the proxy's, when it reaches the deployment hook) is not
edited twice: the hook remembers what the items of each request it edited on the proxy or
through ``edit`` / ``aedit`` hold (their content, not the list object, which LiteLLM's Router
rebuilds on the way) and the model it edited them for, and a request whose items hold
exactly that, going to that model (a fallback to another is edited for its own), goes on as
it is,
``last_result`` left as the first pass set it (ctxwin applied to its own output changes
nothing, so that is what a second pass would send). A new request built from an edited list
(a message appended, one changed) holds something else and is edited as any other; one that
sends an edited list again unchanged goes as it is. What the deployment hook sends goes
straight to the provider: it is not remembered, so a request costs one look at its last item
and no serialization of the history (a fallback or retry starts again from the request
given, and ctxwin's memo makes its second edit cheap).

Recall: with ``recall`` on in the policy, give the model the ``recall`` tool and answer its
calls in your loop with :meth:`ctxwin.Policy.recall_result`::

    tools = [*tools, policy.recall_tool("openai-chat")]
    ...
    if call.function.name == "recall":
        history.append(policy.recall_result(call.id, call.function.arguments, "openai-chat"))

``CtxwinHook(policy, add_recall_tool=True)`` adds the tool's definition (in the request's
format) to each request's ``tools`` (when recall is on and the request has no ``recall``
tool yet); answering the calls stays the loop's part.

Importing this module needs nothing; the ``ImportError`` saying ``pip install
'ctxwin[litellm]'`` comes from the first ``CtxwinHook(...)`` without LiteLLM.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import marshal
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._exceptions import InputError
from ctxwin.formats._chat_thinking import ClaudeThinkingChatAdapter
from ctxwin.formats.openai_chat import OpenAIChatAdapter
from ctxwin.integrations._lazy import require
from ctxwin.integrations._litellm_route import Groups, Route, route_of
from ctxwin.integrations._recall import RECALL_TOOL, recall_on

if TYPE_CHECKING:
    from ctxwin._engine import Policy

__all__ = ["CtxwinHook"]

_EXTRA = "litellm"
_REMEMBER = 256


@dataclass(frozen=True, slots=True)
class _Kind:
    """A kind of request LiteLLM hands its hooks: the ctxwin format of its items, the key
    holding them, what they are called in errors, and the keys of what else the request
    sends (counted toward the budget; Responses' server state keys too)."""

    format: str
    items: str
    noun: str
    envelope: tuple[str, ...]


_CHAT = _Kind(
    "openai-chat",
    "messages",
    "a list or tuple of chat messages",
    # for Anthropic, automatic caching takes one; thinking: whether it asks the API to drop
    # the thinking bound to another prefix (not counted: no key the adapter pays for)
    # tool_choice: Claude's tool-use prompt is shorter when a tool is forced
    # response_format: its JSON schema is part of the prompt (a pydantic class: its schema)
    ("tools", "functions", "tool_choice", "cache_control", "thinking", "response_format"),
)
_RESPONSES = _Kind(
    "openai-responses",
    "input",
    "a string, or a list or tuple of input items",
    # reasoning.context: whether earlier turns' reasoning is read (and so counted); text:
    # its format's JSON schema is part of the prompt
    (
        "instructions",
        "tools",
        "tool_choice",
        "reasoning",
        "previous_response_id",
        "conversation",
        "text",
    ),
)
_ANTHROPIC = _Kind(
    "anthropic",
    "messages",
    "a list or tuple of Anthropic messages",
    # as a chat's; output_config (output_format in the beta): the output schema
    (
        "system",
        "tools",
        "tool_choice",
        "cache_control",
        "thinking",
        "output_config",
        "output_format",
    ),
)
_KINDS = {
    "completion": _CHAT,
    "acompletion": _CHAT,
    "responses": _RESPONSES,
    "aresponses": _RESPONSES,
    "anthropic_messages": _ANTHROPIC,
    "aanthropic_messages": _ANTHROPIC,
}
"""The call types whose requests the hook edits (LiteLLM's ``CallTypes`` values)."""
_TO_ANTHROPIC = OpenAIChatAdapter(cache_control=True)
"""OpenAI Chat as LiteLLM sends it on to Anthropic: its breakpoints are ``cache_control``."""
_CLAUDE_THINKING = ClaudeThinkingChatAdapter()
"""OpenAI Chat as LiteLLM sends it on to Claude: ``thinking_blocks`` are the message's first
blocks, which open the turn (:mod:`ctxwin.formats._chat_thinking`)."""
_CLAUDE_THINKING_CACHED = ClaudeThinkingChatAdapter(cache_control=True)


def CtxwinHook(policy: Policy, *, add_recall_tool: bool = False) -> Any:  # made on first use
    """A LiteLLM ``CustomLogger`` that edits each request's messages with ``policy`` (chat,
    Responses and Anthropic Messages requests).

    ``add_recall_tool=True`` adds the ``recall`` tool to each request's tools when the policy
    has recall on. Its ``last_result`` is the :class:`~ctxwin.Result` of the latest request."""
    policy = checked_policy(policy, "CtxwinHook")
    return _hook_class()(policy, add_recall_tool=add_recall_tool)


def _tool_name(tool: object) -> object:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else tool.get("name")


def _with_recall(data: Mapping[str, Any], policy: Policy, format: str) -> Mapping[str, Any]:
    """``data`` with the recall tool added to its tools, unless it has it already (a request
    the proxy's hook edited); a tool of the user's own named ``recall`` is refused: the
    model's recall calls would reach it, and two tools of one name are a 400."""
    tools = list(data.get("tools") or ())
    ours = policy.recall_tool(format)
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


def _request(data: object, call_type: object = None) -> tuple[_Kind, Sequence[Any]] | None:
    """The kind and the items of a request the hook edits (a list or a tuple; a call type
    of ``None``: a chat request), ``None`` for one it leaves alone (another call type, no
    items, a Responses ``input`` that is one string), and an :class:`~ctxwin.InputError`
    for items of another type."""
    name = getattr(call_type, "value", call_type)
    kind = _CHAT if name is None else _KINDS.get(name) if isinstance(name, str) else None
    if kind is None or not isinstance(data, Mapping):
        return None
    items = data.get(kind.items)
    if items is None or (isinstance(items, str) and kind is _RESPONSES):
        return None
    if isinstance(items, (list, tuple)):
        return kind, items
    raise InputError(f"{kind.noun}, not {type(items).__name__}", path=kind.items)


def _auto(policy: Policy) -> bool:
    return policy.config.cache_breakpoints == "auto"


def _before(groups: Groups, policy: Policy, data: Mapping[str, Any], kind: _Kind) -> Route | None:
    """The route of a proxy request before routing (:meth:`Groups.before_routing`; only a
    chat takes ``cache_control``, so only its route waits for a deployment)."""
    return groups.before_routing(data, kind is _CHAT and _auto(policy), kind is _CHAT)


@dataclass(frozen=True, slots=True)
class _Job:
    """A request the hook edits: its kind, the request (with the recall tool), the body
    ctxwin edits and the route it goes."""

    kind: _Kind
    data: Mapping[str, Any]
    body: dict[str, Any]
    route: Route

    @property
    def format(self) -> str | OpenAIChatAdapter:
        """The format ctxwin edits it in: a chat LiteLLM sends to Anthropic has its
        breakpoints written as ``cache_control``, and one it sends on to Claude (Anthropic,
        Bedrock, Vertex AI, Azure AI) has its ``thinking_blocks`` read as the blocks that
        open their turn, which drops keep (removed only where the model checks their
        prefix and a change invalidated them)."""
        route = self.route
        if route.thinking:
            return _CLAUDE_THINKING_CACHED if route.anthropic else _CLAUDE_THINKING
        return _TO_ANTHROPIC if route.anthropic else self.kind.format


def _body(kind: _Kind, data: Mapping[str, Any], items: Sequence[Any]) -> dict[str, Any]:
    body: dict[str, Any] = {kind.items: list(items)}
    body.update((k, data[k]) for k in kind.envelope if data.get(k) is not None)
    return body


def _sent_request(
    kind: _Kind, data: Mapping[str, Any], body: Mapping[str, Any], sent: Mapping[str, Any]
) -> dict[str, Any]:
    """``data`` with the items ctxwin sent (a new list), and what else ctxwin changed."""
    out = {**data, kind.items: list(sent[kind.items])}
    out.update((k, sent[k]) for k in kind.envelope if k in sent and sent[k] is not body.get(k))
    return out


def _plain(value: object) -> object:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else repr(value)


def _digest(items: Sequence[Any]) -> bytes | None:
    """What ``items`` hold, as 16 bytes that LiteLLM's copies of them share (``None`` for
    items that cannot be written out). Plain data (dicts, lists, strings, numbers) is
    written by ``marshal`` (C, no recursion in Python; ``True``, ``1`` and ``1.0`` apart),
    anything else (LiteLLM ``Message`` objects) as JSON through its ``model_dump``."""
    data = items if type(items) is list else list(items)
    try:
        raw = marshal.dumps(data, 2)  # version 2: the same bytes for equal data, shared or not
    except ValueError:  # SDK objects, subclasses of dict or str, data nested very deep
        try:
            raw = json.dumps(data, sort_keys=True, default=_plain).encode()
        except (TypeError, ValueError, RecursionError):
            return None
    return hashlib.blake2b(raw, digest_size=16).digest()


class _Sent:
    """The requests a hook has edited, by what their items hold (the latest ones), with the
    route each was edited for. A request is first looked up by its format, length and last
    item (cheap), the whole of it written out only when those match one the hook edited."""

    def __init__(self) -> None:
        self._keys: dict[tuple[str, int, bytes, bytes], Route] = {}
        self._heads: dict[tuple[str, int, bytes], int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _head(format: str, items: Sequence[Any]) -> tuple[str, int, bytes] | None:
        last = _digest(items[-1:]) if items else b""
        return None if last is None else (format, len(items), last)

    def add(self, format: str, items: Sequence[Any], route: Route) -> None:
        head = self._head(format, items)
        whole = _digest(items) if head is not None else None
        if head is None or whole is None:
            return
        key = (*head, whole)
        with self._lock:
            if key in self._keys:
                self._keys[key] = route
                return
            if len(self._keys) >= _REMEMBER:
                old = next(iter(self._keys))
                del self._keys[old]
                left = self._heads.pop(old[:3], 1) - 1
                if left:
                    self._heads[old[:3]] = left
            self._keys[key] = route
            self._heads[head] = self._heads.get(head, 0) + 1

    def holds(self, kind: _Kind, items: Sequence[Any], route: Route) -> bool:
        """Whether the hook sent these very items (a request of ``kind``), edited for
        ``route``."""
        head = self._head(kind.format, items)
        if head is None or head not in self._heads:
            return False  # most requests: their last item alone written out
        whole = _digest(items)
        return whole is not None and self._keys.get((*head, whole)) == route.of(kind is _CHAT)


class _Calls:
    """The calls the deployment hook let through, by LiteLLM's logging object of each (held
    weakly) and the format it sent. LiteLLM goes between formats by a call of its own inside
    the first, with the same logging object: ``anthropic_messages`` to an OpenAI model
    (``LiteLLMMessagesToCompletionTransformationHandler``) calls ``aresponses`` or
    ``acompletion`` with a translation of the edited request, which is not edited again (a
    second pass would leave ``last_result`` telling of a no-op)."""

    def __init__(self) -> None:
        self._formats: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def add(self, kwargs: Mapping[str, Any], format: str) -> None:
        log = kwargs.get("litellm_logging_obj")
        with contextlib.suppress(TypeError):  # no weak reference to it, or unhashable
            if log is not None:
                self._formats[log] = format

    def inside(self, kwargs: Mapping[str, Any], format: str) -> bool:
        """Whether ``kwargs`` is a call inside one let through in another format."""
        log = kwargs.get("litellm_logging_obj")
        try:
            outer = self._formats.get(log) if log is not None else None
        except TypeError:
            return False
        return outer is not None and outer != format


@functools.cache
def _hook_class() -> type:
    custom_logger = require("litellm.integrations.custom_logger", _EXTRA)

    class CtxwinHook(custom_logger.CustomLogger):  # type: ignore[misc, name-defined]
        """Edits each request's messages with a ctxwin policy."""

        def __init__(self, policy: Policy, *, add_recall_tool: bool = False) -> None:
            super().__init__()
            self.policy = checked_policy(policy, "CtxwinHook")
            self.add_recall_tool = add_recall_tool
            self.last_result: Any = None
            self._sent = _Sent()
            self._calls = _Calls()
            self._groups = Groups()

        def edit(self, data: Mapping[str, Any]) -> dict[str, Any]:
            """``data`` (completion kwargs) with its messages edited (synchronously)."""
            job = self._job(data, None, None)
            if job is None:
                return dict(data)
            result = self.policy.apply(job.body, format=job.format, model=job.route.model)
            return self._done(job, result, remember=True)

        async def aedit(self, data: Mapping[str, Any], call_type: Any = None) -> dict[str, Any]:
            """Like :meth:`edit`, with ``policy.aapply`` (async summarizers); ``call_type``
            (LiteLLM's, ``None``: a chat request) says what ``data`` is."""
            return await self._aedit(data, call_type, None, remember=True)

        async def _aedit(
            self, data: Mapping[str, Any], call_type: Any, route: Route | None, *, remember: bool
        ) -> dict[str, Any]:
            job = self._job(data, call_type, route)
            if job is None:
                return dict(data)
            result = await self.policy.aapply(job.body, format=job.format, model=job.route.model)
            return self._done(job, result, remember=remember)

        def _job(self, data: Mapping[str, Any], call_type: Any, route: Route | None) -> _Job | None:
            found = _request(data, call_type)
            if found is None:
                return None
            kind, items = found
            route = (route or route_of(data, _auto(self.policy))).of(kind is _CHAT)
            if self.add_recall_tool and recall_on(self.policy):
                data = _with_recall(data, self.policy, kind.format)
            return _Job(kind, data, _body(kind, data, items), route)

        def _done(self, job: _Job, result: Any, *, remember: bool) -> dict[str, Any]:
            self.last_result = result
            out = _sent_request(job.kind, job.data, job.body, result.request)
            if remember:
                self._sent.add(job.kind.format, out[job.kind.items], job.route)
            return out

        async def async_pre_call_hook(
            self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
        ) -> dict[str, Any]:
            found = _request(data, call_type)
            route = None if found is None else _before(self._groups, self.policy, data, found[0])
            if found is None or route is None or self._sent.holds(*found, route):
                return data  # not of the hook's kinds, one for the deployment hook, or edited
            return await self._aedit(data, call_type, route, remember=True)

        async def async_pre_call_deployment_hook(
            self, kwargs: dict[str, Any], call_type: Any
        ) -> dict[str, Any] | None:
            found = _request(kwargs, call_type)
            if found is None or self._calls.inside(kwargs, found[0].format):
                return None
            route = route_of(kwargs, _auto(self.policy))
            self._groups.learn(kwargs, route)
            if self._sent.holds(*found, route):
                self._calls.add(kwargs, found[0].format)
                return None  # the proxy edited it, for this very route
            out = await self._aedit(kwargs, call_type, route, remember=False)
            self._calls.add(kwargs, found[0].format)
            return out

    CtxwinHook.__module__ = __name__
    return CtxwinHook
