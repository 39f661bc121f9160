"""``ctxwin.summarizers.langchain``: summaries through a LangChain chat model or any
Runnable. ``langchain_core`` is imported when the factory is called."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from ctxwin._exceptions import SummarizerError
from ctxwin.summarizers._base import (
    AsyncModelSummarizer,
    ModelSummarizer,
    SummaryCall,
    check_prompt,
    describe,
    parts_of,
    require,
    secrets_of,
)
from ctxwin.summarizers._prompt import DEFAULT_PROMPT
from ctxwin.summarizers._stops import METADATA_STOPS, WHY, Unfinished, unfinished

__all__ = ["langchain"]

InputKind = Literal["messages", "variables"]

_INCOMPLETE_REFUSED = {"content_filter"}
"""``incomplete_details.reason`` of an OpenAI Responses API answer (``status="incomplete"``,
no ``finish_reason``) that says it was filtered; any other reason (``max_output_tokens``)
says it was cut."""


def _metadata_stop(meta: dict[str, Any]) -> tuple[Unfinished, str] | None:
    """Why the metadata says the answer is unfinished, with its ``key=value`` (the first
    entry of :data:`METADATA_STOPS` it holds); None when it says nothing of the kind."""
    for key, table in METADATA_STOPS.items():
        why = unfinished(table, meta.get(key))
        if why is not None:
            return why, f"{key}={meta[key]}"
    return None


def _incomplete(meta: dict[str, Any]) -> str | None:
    """Why an answer of the OpenAI Responses API stopped unfinished (``"max_output_tokens"``,
    ``"content_filter"``...), ``""`` when it does not say; None for a finished answer."""
    if meta.get("status") != "incomplete":
        return None
    details = meta.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return reason.lower() if isinstance(reason, str) else ""


def _refusal(response: Any) -> str | None:
    """The refusal a message carries: langchain-openai keeps it in ``additional_kwargs``
    (Chat Completions) or as a ``refusal`` content block (Responses API)."""
    extra = getattr(response, "additional_kwargs", None) or {}
    if extra.get("refusal"):
        return str(extra["refusal"])
    content = getattr(response, "content", None)
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "refusal":
            return str(block.get("refusal") or "")
    return None


def _stopped(response: Any) -> SummarizerError | None:
    """The error for an answer the provider cut, paused, refused, filtered or broke off
    (read from the message's ``response_metadata`` by the shared table of stop reasons,
    and from its content), None for a finished one."""
    meta = getattr(response, "response_metadata", None) or {}
    stop = _metadata_stop(meta)
    incomplete = _incomplete(meta)
    if incomplete is not None and stop is None:
        kind: Unfinished = "filtered" if incomplete in _INCOMPLETE_REFUSED else "cut"
        stop = kind, f"status=incomplete: {incomplete}"
    refusal = _refusal(response)
    if refusal is not None and stop is None:
        stop = "refused", f"refusal: {refusal}"
    if stop is None:
        return None
    kind, where = stop
    if kind == "cut":
        message = WHY["cut"]
    elif kind in ("refused", "filtered"):
        message = f"the model refused or the answer was filtered ({where})"
    else:
        message = f"{WHY[kind]} ({where})"
    return SummarizerError(f"langchain: {message}", provider="langchain")


class _Answered:
    """A runnable's answer, with the last chat message a model in it answered (None when
    none did, or the runnable ran no LangChain model): a chain ending in a parser
    (``model | StrOutputParser()``) answers a ``str`` that no longer says whether the
    provider cut or refused it."""

    def __init__(self, answer: Any, message: Any) -> None:
        self.answer = answer
        self.message = message


def _last_message() -> Any:
    """A LangChain callback handler that keeps the last chat message a model answered."""
    return _handler_class()()


@functools.cache
def _handler_class() -> Any:
    """The class of :func:`_last_message`'s handlers (made once: langchain_core is imported
    when the factory is called)."""
    base = require("langchain_core.callbacks", "langchain", "langchain").BaseCallbackHandler

    class LastMessage(base):  # type: ignore[misc, valid-type]
        message: Any = None

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            generations = getattr(response, "generations", None) or [[]]
            last = generations[-1][-1] if generations[-1] else None
            self.message = getattr(last, "message", None)

    return LastMessage


_MODEL_FIELDS = ("model_name", "model", "model_id")
"""Where a LangChain chat model keeps its model's name (ChatOpenAI, ChatAnthropic...;
Gemini's ``model``; Bedrock's ``model_id``)."""


def _model_of(runnable: Any) -> str:
    """The name of the first model ``runnable`` is made of (through ``bind`` and chains)."""
    for part in parts_of(runnable):
        for field in _MODEL_FIELDS:
            value = getattr(part, field, None)
            if isinstance(value, str) and value:
                return value
    return ""


def _settings_of(runnable: Any, prompts: Any) -> list[Any]:
    """What ``runnable`` is made of, as the summaries it writes depend on it: each part's
    class, a model's settings (its ``_identifying_params``, which LangChain's own caches
    key on), a binding's arguments (``bind(max_tokens=...)``) and a prompt template's
    text; so that two summarizers over other models or settings do not share summaries."""
    settings: list[Any] = []
    for part in parts_of(runnable):  # each lambda is called at once (B023: no late binding)
        params = _read_safely(lambda: getattr(part, "_identifying_params", None))  # noqa: B023
        kwargs = _read_safely(lambda: getattr(part, "kwargs", None))  # noqa: B023
        template = None
        if isinstance(part, prompts.BasePromptTemplate):  # its messages' templates, as text
            template = _read_safely(lambda: str(part.pretty_repr()))  # noqa: B023
        settings.append(
            [
                type(part).__qualname__,
                dict(params) if isinstance(params, dict) else None,
                dict(kwargs) if isinstance(kwargs, dict) else None,
                template,
            ]
        )
    return settings


def _read_safely(read: Callable[[], Any]) -> Any:
    """What ``read`` reads, None where it fails (a property of a model that raises, or
    that a part lacks, is no reason to refuse the summarizer)."""
    try:
        return read()
    except Exception:
        return None


class _Runnable:
    provider = "langchain"

    def __init__(self, runnable: Any, messages: Any, *, prompt: str, input: InputKind) -> None:
        self.runnable = runnable
        self.messages = messages  # langchain_core.messages
        self.model = _model_of(runnable)
        prompts = require("langchain_core.prompts", "langchain", "langchain")
        self.settings = _settings_of(runnable, prompts)
        """What names it in the shared summaries' keys, with its model and prompt."""
        self.prompt = prompt
        self.input = input
        runnables = require("langchain_core.runnables", "langchain", "langchain")
        self.watched = isinstance(runnable, runnables.Runnable)
        """Whether its model's answers are watched through callbacks (a LangChain Runnable;
        an object of another kind with ``invoke`` takes no ``config``)."""

    def request(self, call: SummaryCall) -> dict[str, Any]:
        if self.input == "variables":
            variables = {
                "prompt": self.prompt,
                "task": call.task,
                "text": call.text,
                "tool": call.tool,
                "call_id": call.call_id,
                "max_tokens": call.max_tokens,
                "instructions": call.instructions,
            }
            return {"input": variables}
        return {
            "input": [
                self.messages.SystemMessage(content=self.prompt),
                self.messages.HumanMessage(content=call.task),
            ]
        }

    def send(self, request: dict[str, Any]) -> Any:
        if not self.watched:
            return self.runnable.invoke(request["input"])
        seen = _last_message()
        answer = self.runnable.invoke(request["input"], config={"callbacks": [seen]})
        return _Answered(answer, seen.message)

    async def asend(self, request: dict[str, Any]) -> Any:
        if not self.watched:
            return await self.runnable.ainvoke(request["input"])
        seen = _last_message()
        answer = await self.runnable.ainvoke(request["input"], config={"callbacks": [seen]})
        return _Answered(answer, seen.message)

    def read(self, response: Any, call: SummaryCall) -> str:
        if isinstance(response, _Answered):
            if isinstance(response.answer, str):  # a parser's: the model's own answer checked
                if isinstance(response.message, self.messages.BaseMessage):
                    self.read(response.message, call)
                return response.answer
            response = response.answer
        if isinstance(response, str):
            return response
        if isinstance(response, self.messages.BaseMessage):
            stopped = _stopped(response)
            if stopped is not None:
                raise stopped
            if getattr(response, "tool_calls", None):  # a preamble before a call
                raise SummarizerError(
                    "langchain: the model answered with a tool call, not a summary",
                    provider="langchain",
                )
            return str(response.text)
        raise SummarizerError(
            f"langchain: the runnable returned {type(response).__name__}, not a message or str",
            provider="langchain",
        )

    def failure(self, error: Exception) -> SummarizerError:
        status = getattr(error, "status_code", None)
        if status is None:  # provider errors wrapped by an integration keep the response
            status = getattr(getattr(error, "response", None), "status_code", None)
        return describe("langchain", error, status, secrets_of(self.runnable, error))


def langchain(
    runnable: Any,
    *,
    prompt: str | None = None,
    input: InputKind = "messages",
    use_async: bool = False,
) -> ModelSummarizer | AsyncModelSummarizer:
    """A summarizer over a LangChain chat model, or any Runnable (``model | parser``...).

    With ``input="messages"`` (the default) the runnable is invoked with a
    ``SystemMessage`` holding ``prompt`` (by default :data:`DEFAULT_PROMPT`) and a
    ``HumanMessage`` with the tool's name, the budget, the policy's
    ``summarize.instructions`` and the output. With ``input="variables"`` it gets a dict
    for a prompt template instead: ``prompt``, ``task`` (that message's text), ``text``,
    ``tool``, ``call_id``, ``max_tokens``, ``instructions``. It may return a message or a
    ``str``. The model's output limit is the model's own (``model.bind(max_tokens=...)``).

    ``use_async=True`` calls ``ainvoke`` (an async summarizer, for ``aapply``); by default
    ``invoke`` runs on a thread of its own. Any exception of the runnable, and an answer the
    provider cut, paused, refused, filtered or broke off (the stop reasons of OpenAI,
    Anthropic, Gemini, Mistral, Bedrock and Ollama in ``response_metadata``), or ended
    with a tool call, raise :class:`ctxwin.SummarizerError`, and the ``summarize`` step
    falls back to the cap; a chain that ends in a parser (``model | StrOutputParser()``)
    too: the last answer of a model in it is watched through LangChain's callbacks.
    """
    messages = require("langchain_core.messages", "langchain", "langchain")
    method = "ainvoke" if use_async else "invoke"
    if not callable(getattr(runnable, method, None)):
        raise SummarizerError(
            f"ctxwin.summarizers.langchain needs a Runnable with {method}(), "
            f"got {type(runnable).__name__}",
            provider="langchain",
        )
    check_prompt("langchain", prompt)
    if input not in ("messages", "variables"):
        raise SummarizerError(
            f"ctxwin.summarizers.langchain: input must be 'messages' or 'variables', got {input!r}",
            provider="langchain",
        )
    backend = _Runnable(
        runnable, messages, prompt=DEFAULT_PROMPT if prompt is None else prompt, input=input
    )
    return AsyncModelSummarizer(backend) if use_async else ModelSummarizer(backend)
