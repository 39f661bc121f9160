"""What the LangChain and LangGraph integrations share: a policy run over LangChain messages.

The messages go to the engine as an OpenAI Chat body (:mod:`ctxwin.formats.langchain`)
and come back through the edit map, so what ctxwin did not change is the very object the
framework holds. Needs ``langchain-core`` only (LangGraph's prebuilt agents have no
``langchain``).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxwin._args import checked_policy
from ctxwin._core.edit_map import MessageChange, edit_map
from ctxwin._core.memo import Memo
from ctxwin._core.records import Fix
from ctxwin._core.repair import RepairTexts, repair_conversation
from ctxwin._exceptions import FormatError, InputError
from ctxwin._feedback.usage import Usage, passes_beside
from ctxwin.formats._tool_prompt import claude_rules
from ctxwin.formats.langchain import ChatBody, LangChainChatAdapter, LangChainMessages
from ctxwin.integrations._lazy import require
from ctxwin.integrations._recall import RECALL_DESCRIPTION, RECALL_TOOL, parameters

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result

__all__ = ["Edited", "LangChainRun", "foreign_recall", "model_name", "recall_tool", "usage_of"]

_MARK = "ctxwin"
"""The key of the ``metadata`` that marks ctxwin's own ``recall`` tool."""

ADAPTER = LangChainChatAdapter()
"""The OpenAI Chat adapter, reading the reasoning of AI messages as the provider behind the
chat model reads it (see :mod:`ctxwin.formats._lc_chat`)."""


class _Factory:
    """The LangChain messages ctxwin adds: synthetic tool results, mostly."""

    def __init__(self) -> None:
        self._m = require("langchain_core.messages", "langchain")

    def tool(self, call_id: str, name: str | None, content: object, is_error: bool) -> object:
        return self._m.ToolMessage(
            content=content,
            tool_call_id=call_id,
            name=name,
            status="error" if is_error else "success",
        )

    def function(self, name: str, content: object) -> object:
        return self._m.FunctionMessage(content=content, name=name)

    def message(self, role: str, content: object) -> object:
        cls = {
            "user": self._m.HumanMessage,
            "assistant": self._m.AIMessage,
        }.get(role, self._m.SystemMessage)
        return cls(content=content)


@dataclass(frozen=True, slots=True)
class Edited:
    """A LangChain request as ctxwin sends it: the system message (the given one when
    ctxwin kept it, ``None`` when there was none), the messages, and whether anything
    differs from what was given."""

    system: object | None
    messages: list[Any]
    changed: bool


class LangChainRun:
    """One policy over one agent's LangChain requests (it remembers converted messages
    and tools, so a growing history costs its new messages only)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.messages = LangChainMessages()
        self._factory = _Factory()
        self._tools = Memo(10_000)

    # ------------------------------------------------------------- requests

    def body(
        self,
        messages: Sequence[object],
        system: object | None = None,
        tools: Sequence[object] = (),
        response_format: Mapping[str, Any] | None = None,
    ) -> ChatBody:
        """The Chat body of a request; ``tools`` (LangChain tools or dicts) and the
        structured-output ``response_format`` count toward the budget."""
        with _located(system is not None):
            tool_dicts = [t for t in map(self._tool, tools) if t]
            return self.messages.body(messages, system, tool_dicts, response_format)

    def apply(self, chat: ChatBody, model: str | None = None) -> Result:
        """The policy's result for ``chat``; a :class:`ctxwin.FormatError` rather than a
        result that dropped a ``ToolMessage`` answering a call ctxwin could not read (see
        :meth:`LangChainMessages.check_drops`)."""
        with _located(chat.system):
            result = self.policy.apply(chat.body, ADAPTER, model=model)
            self.messages.check_drops(chat, result.fixes)
            return result

    async def aapply(self, chat: ChatBody, model: str | None = None) -> Result:
        with _located(chat.system):
            result = await self.policy.aapply(chat.body, ADAPTER, model=model)
            self.messages.check_drops(chat, result.fixes)
            return result

    def back(self, chat: ChatBody, result: Result) -> Edited:
        """The request ``result`` sends, as LangChain messages."""
        edits = result.edit_map
        given_system = chat.sources[0] if chat.system else None
        if not edits.changed() and not edits.dropped and _in_order(edits.messages):
            return Edited(given_system, list(chat.sources[1 if chat.system else 0 :]), False)
        request = result.request
        wire = request.get("messages", []) if isinstance(request, Mapping) else []
        out = self.messages.back(chat, result.conversation, wire, edits, self._factory)
        system = given_system
        if chat.system and edits.messages and edits.messages[0].source == 0:
            system, out = out[0], out[1:]
        return Edited(system, out, True)

    def repaired(
        self, messages: Sequence[object], model: str | None = None
    ) -> tuple[list[Any], list[Fix]]:
        """``messages`` with their pairing repaired (the policy's ``repair:`` texts): the same
        objects where nothing needed it. For a Claude ``model``, call ids are made unique in
        the whole history, as Anthropic asks."""
        chat = self.messages.body(messages)
        adapter = ADAPTER
        before = claude_rules(adapter.parse(chat.body), model)
        r = self.policy.config.repair
        texts = RepairTexts(**r.model_dump())
        fixed, fixes = repair_conversation(before, adapter, texts=texts)
        if not fixes:
            return list(messages), []
        self.messages.check_drops(chat, fixes)
        rendered = adapter.render(fixed)
        wire = rendered.get("messages", []) if isinstance(rendered, Mapping) else []
        edits = edit_map(before, fixed)
        return self.messages.back(chat, fixed, wire, edits, self._factory), fixes

    def _tool(self, tool: object) -> Mapping[str, Any] | None:
        if isinstance(tool, Mapping):
            return tool
        hit = self._tools.get(tool)
        if hit is None:
            convert = require("langchain_core.utils.function_calling", "langchain")
            try:
                hit = convert.convert_to_openai_tool(tool)
            except Exception:  # a tool LangChain cannot describe: not counted
                hit = {}
            self._tools.put(tool, hit)
        return hit if isinstance(hit, Mapping) and hit else None


_AT = re.compile(r"messages\[(\d+)\]")


def _relocated(exc: InputError, system: bool) -> InputError:
    """``exc`` located in the caller's terms: with a system message given, the Chat body's
    ``messages[0]`` is that message (``system``) and its ``messages[i]`` the caller's
    ``messages[i - 1]``. Errors of other kinds, or located elsewhere, are ``exc`` itself."""
    found = _AT.match(exc.path or "")
    if not system or found is None or type(exc) not in (InputError, FormatError):
        return exc
    k, rest = int(found.group(1)), (exc.path or "")[found.end() :]
    path = f"system{rest}" if k == 0 else f"messages[{k - 1}]{rest}"
    if isinstance(exc, FormatError):
        return FormatError(exc.reason, path=path, format=exc.format, candidates=exc.candidates)
    return InputError(exc.reason, path=path)


@contextmanager
def _located(system: bool) -> Iterator[None]:
    """Raises the :class:`InputError` of the block located in the caller's terms (see
    :func:`_relocated`)."""
    try:
        yield
    except InputError as exc:
        moved = _relocated(exc, system)
        if moved is exc:
            raise
        raise moved from exc.__cause__


def _in_order(changes: Sequence[MessageChange]) -> bool:
    """Whether every output message is the input message at its own place (a repair that
    only moved results, after a message put between them and their call, keeps them all
    but not in order)."""
    return all(map(operator.eq, (c.source for c in changes), range(len(changes))))


def recall_tool(policy: Policy) -> Any:
    """The ``recall`` tool of ``policy`` as a LangChain ``StructuredTool`` (arguments
    ``handle``, ``lines``, ``grep``): it answers with :meth:`ctxwin.Policy.recall_call`, and
    an error answer (an unknown handle, a bad range) comes back as a ``ToolMessage`` with
    ``status="error"``; it never raises into the agent loop."""
    policy = checked_policy(policy, "recall_tool")
    tools = require("langchain_core.tools", "langchain")

    def answer(**arguments: Any) -> str:
        found = policy.recall_call(arguments)
        if found.is_error:
            raise tools.ToolException(found.text)
        return found.text

    return tools.StructuredTool.from_function(
        func=answer,
        name=RECALL_TOOL,
        description=RECALL_DESCRIPTION,
        args_schema=parameters(),
        handle_tool_error=True,
        metadata={_MARK: RECALL_TOOL},
    )


def foreign_recall(tools: Iterable[object]) -> bool:
    """Whether ``tools`` hold a tool named ``recall`` that is not ctxwin's (a LangChain tool
    or a provider dict)."""
    for tool in tools:
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            if name == RECALL_TOOL:
                return True
        elif getattr(tool, "name", None) == RECALL_TOOL:
            metadata = getattr(tool, "metadata", None)
            if not (isinstance(metadata, Mapping) and metadata.get(_MARK) == RECALL_TOOL):
                return True
    return False


def model_name(model: object) -> str | None:
    """The model name a LangChain chat model carries (``model_name``, ``model``...)."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def usage_of(response: object) -> Usage | None:
    """The usage LangChain reports on a model response (``usage_metadata`` of its
    ``AIMessage``), or ``None`` when it reports none. Its ``request_tokens`` (see
    :attr:`ctxwin.Usage.request_tokens`) are read beside it: an Anthropic server-side tool
    loop sums its passes in ``usage_metadata``, and ChatAnthropic keeps Anthropic's own usage,
    which lists them or says a server tool ran, in ``response_metadata["usage"]`` (a streamed
    message keeps none: its content shows the server's calls). ``None`` too when that usage is
    unreadable, rather than learn from a sum of passes."""
    inner = getattr(response, "model_response", None)
    messages = getattr(inner if inner is not None else response, "result", None)
    if not isinstance(messages, list):
        messages = [response]
    for msg in messages:
        meta = getattr(msg, "usage_metadata", None)
        if not isinstance(meta, Mapping):
            continue
        total = meta.get("input_tokens")
        if isinstance(total, int) and total > 0:
            details = meta.get("input_token_details")
            details = details if isinstance(details, Mapping) else {}
            output = meta.get("output_tokens")
            try:
                sent = passes_beside(
                    getattr(msg, "response_metadata", None), getattr(msg, "content", None)
                )
            except InputError:
                return None
            return Usage(
                total,
                int(details.get("cache_read") or 0),
                int(details.get("cache_creation") or 0),
                output if isinstance(output, int) else 0,
                sent,
            )
    return None
