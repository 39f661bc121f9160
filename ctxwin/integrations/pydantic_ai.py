"""ctxwin for pydantic-ai (``pip install 'ctxwin[pydantic-ai]'``).

Edit each model request, keep the run's history whole::

    agent = Agent(model, tools=[...], capabilities=[ContextWindow(policy)])

``ContextWindow(policy)`` is a capability whose ``prepare_model_request`` sends the model the
request as the policy edits it for the model about to serve it (pydantic-ai runs that hook
for each attempt: a ``ModelFallback`` candidate gets the request edited for its own
context window and pricing); the run's messages (``result.all_messages()``) keep every tool
return whole. ``process_history(policy)`` is a history processor for
``Agent(capabilities=[ProcessHistory(process_history(policy))])``, which pydantic-ai
*persists*: the history itself becomes the edited one. Applying ctxwin to its own output
changes nothing, so either way every request is what the policy makes of the whole
conversation. (Put in ``capabilities=[...]`` on its own, a history processor is called with
the run context instead of the messages: an :class:`~ctxwin.InputError` says where it goes.)

What maps to what (see :mod:`ctxwin.integrations._pydantic_ai_map`): a tool return whose
``outcome`` is ``failed`` or ``retried`` is an error result (never selected away); images in
user prompts and tool returns are kept; an unchanged message is the very object the run
holds, an edited one a copy with only the edited part's ``content`` (or a call's ``args``)
replaced, and the ``tool_call_id`` of a call and its return where repair renamed a duplicate
id. ``ContextWindow`` counts the request's instructions and tool definitions toward
the budget, and counts the request as the model serving it is sent it (``OpenAIChatModel``,
``OpenAIResponsesModel``: OpenAI's tool JSON, a wire message per tool return, call or output;
see :mod:`ctxwin.integrations._pydantic_ai_served`); a history processor does not see them,
and counts the request in Anthropic's shape. An error names the run's message and part
(``messages[6].parts[0]``, counted from the start of the run's messages even after a
provider compaction), never the place in the request ctxwin built (see :func:`_relocated`).

Thinking (``ThinkingPart``) is never edited: it stays or goes with its message. Each part
counts as the model the request goes to reads it (see
:mod:`ctxwin.integrations._pydantic_ai_parts`): for ``AnthropicModel`` a signed part is a
``thinking`` block (``redacted_thinking``), for ``OpenAIResponsesModel`` a reasoning item
is worth its encrypted content only, and nothing in a turn before the user's latest message
unless the request reads every turn's reasoning; a part the model cannot take back (unsigned,
another provider's) counts as the tagged text pydantic-ai sends instead. A history processor
does not know the model: each part counts as a ``thinking`` block.

Recall: when the policy has ``recall`` on, ``ContextWindow`` adds the ``recall`` tool to the
agent (its toolset), so the model can get back what a placeholder or notice quotes a handle
for. An error answer (an unknown handle, a bad range) is a failed tool return
(``ToolFailed``): the model sees it, the run goes on. With ``process_history``, pass
``tools=[recall_tool(policy)]`` yourself.

Importing this module needs nothing; the ``ImportError`` saying ``pip install
'ctxwin[pydantic-ai]'`` comes from the first call of :func:`ContextWindow`,
:func:`process_history` or :func:`recall_tool` without pydantic-ai.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._exceptions import FormatError, InputError
from ctxwin._feedback.usage import read_usage
from ctxwin.integrations._lazy import require
from ctxwin.integrations._pydantic_ai_map import Mapper, Request
from ctxwin.integrations._pydantic_ai_parts import reader_of
from ctxwin.integrations._recall import RECALL_DESCRIPTION, RECALL_TOOL, parameters, recall_on

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result

__all__ = ["ContextWindow", "HistoryProcessor", "process_history", "recall_tool"]

_EXTRA = "pydantic-ai"


def ContextWindow(
    policy: Policy, *, id: str | None = None, register_recall: bool = True, observe: bool = True
) -> Any:
    """A pydantic-ai capability that edits each model request with ``policy``.

    With recall on in the policy it gives the agent the ``recall`` tool
    (``register_recall=False``: it does not). The usage each response reports teaches the
    policy what its counts are worth (:meth:`ctxwin.Policy.observe`; ``observe=False``: it
    does not); pydantic-ai's offline ``TestModel`` and ``FunctionModel`` guess their usage
    and are not observed. Its ``last_result`` is the :class:`~ctxwin.Result` of the latest
    request (its ``report``, its ``edit_map``)."""
    policy = checked_policy(policy, "ContextWindow")
    return _capability_class()(policy, register_recall, observe, id=id)


def recall_tool(policy: Policy) -> Any:
    """The ``recall`` tool of ``policy`` as a pydantic-ai ``Tool`` (for ``tools=[...]``): it
    answers with :meth:`ctxwin.Policy.recall_call`; an error answer raises ``ToolFailed``,
    which pydantic-ai turns into a failed tool return the model sees."""
    policy = checked_policy(policy, "recall_tool")
    pydantic_ai = require("pydantic_ai", _EXTRA)

    def recall(**arguments: Any) -> str:
        found = policy.recall_call(arguments)
        if found.is_error:
            raise pydantic_ai.ToolFailed(found.text)
        return found.text

    return pydantic_ai.Tool.from_schema(
        recall, name=RECALL_TOOL, description=RECALL_DESCRIPTION, json_schema=parameters()
    )


@functools.cache
def _capability_class() -> type:
    capabilities = require("pydantic_ai.capabilities", _EXTRA)
    toolsets = require("pydantic_ai.toolsets", _EXTRA)

    @dataclasses.dataclass
    class ContextWindow(capabilities.AbstractCapability):  # type: ignore[misc, name-defined]
        """Edits each model request with a ctxwin policy; the run's history stays whole."""

        policy: Policy
        register_recall: bool = True
        observe: bool = True
        last_result: Result | None = dataclasses.field(
            default=None, init=False, repr=False, compare=False
        )
        _attempts: dict[int, tuple[Any, Result]] = dataclasses.field(
            default_factory=dict, init=False, repr=False, compare=False
        )
        """The result of each attempt not answered yet, by its request context (runs may
        share the capability: ``last_result`` may be another run's)."""
        _mapper: Mapper = dataclasses.field(
            default_factory=Mapper, init=False, repr=False, compare=False
        )

        async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
            """Per attempt, once the model serving it is known (``before_model_request``
            runs once per step, while ``ModelFallback`` may still move it to another)."""
            messages = list(request_context.messages)
            reader = reader_of(request_context.model, request_context.model_settings)
            params = request_context.model_request_parameters
            request = self._mapper.request(messages, params, reader)
            model = getattr(request_context.model, "model_name", None)
            with _located(request):
                result = await self.policy.aapply(request.body, format=request.adapter, model=model)
            self.last_result = result
            if self.observe:
                attempts = self._attempts
                if len(attempts) >= 256:  # attempts that never got an answer
                    attempts.clear()
                attempts[id(request_context)] = (request_context, result)
            request_context.messages = self._mapper.apply(request, result)
            return request_context

        async def after_model_request(
            self, ctx: Any, *, request_context: Any, response: Any
        ) -> Any:
            """The usage the response reports, fed back to the policy (``observe``)."""
            found = self._attempts.pop(id(request_context), None)
            if found is None or found[0] is not request_context:
                return response
            if not _guessed(request_context.model) and getattr(response, "usage", None):
                self.policy.observe(found[1], _usage_of(response, request_context.model))
            return response

        def get_toolset(self) -> Any:
            if not (self.register_recall and recall_on(self.policy)):
                return None
            # an id, as durable execution (Temporal) wants of every toolset
            return toolsets.FunctionToolset([recall_tool(self.policy)], id="ctxwin_recall")

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # holds a Policy: not part of an agent spec

    ContextWindow.__module__ = __name__
    return ContextWindow


def _guessed(model: object) -> bool:
    """Whether ``model`` (unwrapped) is one of pydantic-ai's offline doubles, whose usage
    is a guess (a subclass of one is the user's own, and is believed)."""
    while (inner := getattr(model, "wrapped", None)) is not None:
        model = inner
    name = f"{type(model).__module__}.{type(model).__qualname__}"
    return name in (
        "pydantic_ai.models.test.TestModel",
        "pydantic_ai.models.function.FunctionModel",
    )


def _usage_of(response: Any, model: Any) -> Any:
    """The usage ``response`` reports, as :meth:`ctxwin.Policy.observe` is to read it: for an
    Anthropic model whose turn ran a server-side tool loop, summed over its sampling passes
    (each reading the request and what the tools added) with no pass's own input kept, a
    :class:`~ctxwin.Usage` whose ``request_tokens`` is 0, so the policy does not learn the sum
    as its tokenizer's gap."""
    if reader_of(model).served != "anthropic" or not _summed(response):
        return response.usage
    return dataclasses.replace(read_usage(response.usage), request_tokens=0)


def _summed(response: Any) -> bool:
    """Whether an Anthropic response's usage sums several sampling passes, by what pydantic-ai
    keeps of Anthropic's (``RequestUsage.details``, written by its
    ``models/anthropic/_response.extract_usage_details``; no pass's own input): the pass count
    where it gives one (``message_iterations``, and ``compaction_iterations``, whose totals it
    adds to the input), as its own ``_cache_health._sums_cache_usage`` reads it; a context
    size it stamped apart from the input (the last pass's, where Anthropic listed them:
    ``last_pass_input_tokens``); a web search it counts (``web_search_requests``); or a call
    the server ran among the parts (a ``NativeToolCallPart``: code execution, web fetch...)."""
    usage = response.usage
    details = getattr(usage, "details", None) or {}
    passes = details.get("message_iterations")
    if isinstance(passes, int):
        return passes + int(details.get("compaction_iterations") or 0) > 1
    context = _context_input_tokens(response)
    if context is not None and context != getattr(usage, "input_tokens", context):
        return True
    if details.get("web_search_requests"):
        return True
    parts = getattr(response, "parts", ())
    return any(getattr(p, "part_kind", None) == "builtin-tool-call" for p in parts)


def _context_input_tokens(response: Any) -> int | None:
    """The context size pydantic-ai stamped on ``response`` (None: none, or a pydantic-ai
    that stamps none)."""
    try:
        from pydantic_ai._context_size import marked_context_input_tokens

        found = marked_context_input_tokens(response)
    except Exception:  # another pydantic-ai
        return None
    return found if isinstance(found, int) else None


def process_history(policy: Policy) -> HistoryProcessor:
    """A pydantic-ai history processor that applies ``policy``, for
    ``capabilities=[ProcessHistory(process_history(policy))]`` (on its own in
    ``capabilities=[...]`` it is no capability: that is :func:`ContextWindow`)."""
    policy = checked_policy(policy, "process_history")
    require("pydantic_ai", _EXTRA)
    return HistoryProcessor(policy)


class HistoryProcessor:
    """An async pydantic-ai history processor applying a policy (see :func:`process_history`).

    ``last_result`` is the :class:`~ctxwin.Result` of the latest call."""

    def __init__(self, policy: Policy) -> None:
        self.policy = checked_policy(policy, "HistoryProcessor")
        self.last_result: Result | None = None
        self._mapper = Mapper()

    async def __call__(self, messages: list[Any]) -> list[Any]:
        if not isinstance(messages, (list, tuple)):
            raise InputError(_not_messages(messages))
        request = self._mapper.request(messages)
        with _located(request):
            result = await self.policy.aapply(request.body, format="anthropic")
        self.last_result = result
        return self._mapper.apply(request, result)


def _not_messages(given: object) -> str:
    """What is wrong when the processor gets something other than the run's messages: most
    often the run context, because it was put among the agent's capabilities, where
    pydantic-ai calls a function with the run context to build a capability."""
    if isinstance(given, require("pydantic_ai", _EXTRA).RunContext):
        return (
            "process_history(policy) is a history processor, not a capability: pass "
            "capabilities=[ProcessHistory(process_history(policy))], or "
            "capabilities=[ContextWindow(policy)]"
        )
    return f"a history processor takes the run's list of messages, not {type(given).__name__}"


_AT = re.compile(r"messages\[(\d+)\](?:\.content\[(\d+)\])?")


def _relocated(exc: InputError, request: Request) -> InputError:
    """``exc`` located in the run's terms: the body's ``messages[b]`` is the run's message
    ``start + b - lead`` (``start``: the messages before a compaction, not sent; ``lead``:
    the system messages an OpenAI model's body begins with, the ``instructions``), and its
    block ``content[j]`` the part it was made from (``parts[p]``), where there is one (what
    lies deeper is the wire block's, not the part's: left out, the reason says it). Errors
    of other kinds, or located elsewhere, are ``exc`` itself."""
    path = exc.path or ""
    found = _AT.match(path)
    if found is None or type(exc) not in (InputError, FormatError):
        return exc
    k = int(found.group(1)) - request.lead
    if k < 0:
        at = "instructions"
    elif k >= len(request.wires):
        return exc
    else:
        at = f"messages[{len(request.before) + k}]"
        parts = request.wires[k].parts
        j = found.group(2)
        p = parts[int(j)] if j is not None and int(j) < len(parts) else None
        at += f".parts[{p}]" if p is not None else ""
    if isinstance(exc, FormatError):
        return FormatError(exc.reason, path=at, format=exc.format, candidates=exc.candidates)
    return InputError(exc.reason, path=at)


@contextmanager
def _located(request: Request) -> Iterator[None]:
    """Raises the :class:`InputError` the policy raises on ``request``'s body located in
    the run's messages (see :func:`_relocated`)."""
    try:
        yield
    except InputError as exc:
        moved = _relocated(exc, request)
        if moved is exc:
            raise
        raise moved from exc.__cause__
