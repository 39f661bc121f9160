"""ctxwin.summarizers.langchain on LangChain's own fake chat model and Runnables: what the
runnable is given, what of its answer becomes the summary, and the fallback on errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda

import ctxwin.summarizers
from ctxwin import SummarizerError
from ctxwin.steps._names import summarizer_name
from ctxwin.summarizers import DEFAULT_PROMPT, AsyncModelSummarizer, ModelSummarizer
from tests.summarizers.helpers import LONG, apply, call, result_of

TASK = (
    "Summarize the output of the tool `run_tests` (call c1) in at most 50 tokens.\n\n"
    f"Instructions for this tool:\nName every failing module.\n\n<tool_output>\n{LONG}\n"
    "</tool_output>"
)


def model(*answers: str | AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(
        messages=iter([AIMessage(a) if isinstance(a, str) else a for a in answers])
    )


def recorded(seen: list[Any], then: Any) -> Any:
    """A chain that records what it is given, then runs ``then``."""

    def record(value: Any) -> Any:
        seen.append(value)
        return value

    return RunnableLambda(record) | then


def test_a_chat_model_gets_the_prompt_as_system_and_the_task_as_human() -> None:
    seen: list[Any] = []
    summarizer = ctxwin.summarizers.langchain(recorded(seen, model("summary: 60 TypeErrors")))
    assert isinstance(summarizer, ModelSummarizer)
    result = apply(summarizer)
    ((system, human),) = seen
    assert isinstance(system, SystemMessage)
    assert isinstance(human, HumanMessage)
    assert (system.content, human.content) == (DEFAULT_PROMPT, TASK)
    assert result_of(result).endswith("\nsummary: 60 TypeErrors")
    assert [e.fallback for e in result.report.edits] == [None]


def test_use_async_awaits_ainvoke_under_aapply() -> None:
    class Duck:
        """Any object with invoke/ainvoke will do; this one tells which was called."""

        def invoke(self, value: Any) -> Any:
            raise AssertionError("invoke called")

        async def ainvoke(self, value: Any) -> Any:
            await asyncio.sleep(0)
            return AIMessage("async summary")

    summarizer = ctxwin.summarizers.langchain(Duck(), use_async=True)
    assert isinstance(summarizer, AsyncModelSummarizer)
    result = apply(summarizer, "aapply")
    assert result_of(result).endswith("\nasync summary")


def test_a_chain_ending_in_a_parser_may_return_a_str() -> None:
    summarizer = ctxwin.summarizers.langchain(model("parsed summary") | StrOutputParser())
    assert call(summarizer) == "parsed summary"


def test_variables_feed_a_prompt_template() -> None:
    seen: list[Any] = []
    template = ChatPromptTemplate.from_messages([("system", "{prompt}"), ("human", "{task}")])
    chain = template | recorded(seen, model("ok"))
    summarizer = ctxwin.summarizers.langchain(chain, input="variables", prompt="Short.")
    assert call(summarizer, "out", call_id=None) == "ok"
    (value,) = seen
    messages: list[BaseMessage] = value.to_messages()
    assert [m.content for m in messages] == [
        "Short.",
        "Summarize the output of the tool `run_tests` in at most 50 tokens.\n\n"
        "<tool_output>\nout\n</tool_output>",
    ]


def test_a_raising_runnable_falls_back_to_the_cap() -> None:
    def boom(value: Any) -> Any:
        raise RuntimeError("model unavailable")

    result = apply(ctxwin.summarizers.langchain(RunnableLambda(boom)))
    assert [e.fallback for e in result.report.edits] == [
        "summarizer_error: SummarizerError: langchain: RuntimeError: model unavailable"
    ]
    assert "tokens of run_tests output truncated" in result_of(result)


def test_a_provider_error_keeps_its_status() -> None:
    class RateLimited(Exception):
        status_code = 429

    def limited(value: Any) -> Any:
        raise RateLimited("slow down")

    with pytest.raises(SummarizerError) as info:
        call(ctxwin.summarizers.langchain(RunnableLambda(limited)))
    assert (info.value.provider, info.value.status_code) == ("langchain", 429)
    assert str(info.value) == "langchain: RateLimited (429): slow down"
    assert isinstance(info.value.__cause__, RateLimited)


@pytest.mark.parametrize("metadata", [{"finish_reason": "length"}, {"stop_reason": "max_tokens"}])
def test_an_answer_cut_at_the_limit_falls_back(metadata: dict[str, str]) -> None:
    cut = AIMessage("half a summ", response_metadata=metadata)
    result = apply(ctxwin.summarizers.langchain(model(cut)))
    assert [e.fallback for e in result.report.edits] == [
        "summarizer_error: SummarizerError: langchain: the summary was cut at the model's "
        "output limit"
    ]


RESPONSES_API = {"model_provider": "openai", "status": "incomplete"}
"""``response_metadata`` of ChatOpenAI on the Responses API for an unfinished answer: no
``finish_reason``, a ``status`` and ``incomplete_details`` instead."""


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            AIMessage(
                [{"type": "text", "text": "40 tests failed: test_0, te", "id": "msg_1"}],
                response_metadata={
                    **RESPONSES_API,
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            ),
            "the summary was cut at the model's output limit",
        ),
        (
            AIMessage(
                [{"type": "text", "text": "40 tests failed", "id": "msg_1"}],
                response_metadata={
                    **RESPONSES_API,
                    "incomplete_details": {"reason": "content_filter"},
                },
            ),
            "the model refused or the answer was filtered (status=incomplete: content_filter)",
        ),
        (
            AIMessage(
                [{"type": "refusal", "refusal": "I can't help with that.", "id": "msg_1"}],
                response_metadata={"model_provider": "openai", "status": "completed"},
            ),
            "the model refused or the answer was filtered (refusal: I can't help with that.)",
        ),
    ],
)
def test_an_unfinished_responses_api_answer_falls_back(answer: AIMessage, why: str) -> None:
    """On the Responses API langchain-openai says a cut or filtered answer through
    ``status="incomplete"`` and a refusal through a ``refusal`` block: the cut text was
    taken for the summary."""
    result = apply(ctxwin.summarizers.langchain(model(answer)))
    assert [e.fallback for e in result.report.edits] == [
        f"summarizer_error: SummarizerError: langchain: {why}"
    ]
    assert "tokens of run_tests output truncated" in result_of(result)


def test_an_answer_calling_a_tool_falls_back() -> None:
    # the agent's own model, bound to its tools, reused as the summarizer
    called = AIMessage(
        "Let me re-run the failing tests.",
        tool_calls=[{"name": "run_tests", "args": {}, "id": "call_1"}],
    )
    result = apply(ctxwin.summarizers.langchain(model(called)))
    assert [e.fallback for e in result.report.edits] == [
        "summarizer_error: SummarizerError: langchain: the model answered with a tool call, "
        "not a summary"
    ]
    assert "tokens of run_tests output truncated" in result_of(result)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            AIMessage("half a summ", response_metadata={"finish_reason": "length"}),
            "the summary was cut at the model's output limit",
        ),
        (
            AIMessage("I can't", response_metadata={"stop_reason": "refusal"}),
            "the model refused or the answer was filtered (stop_reason=refusal)",
        ),
    ],
)
def test_a_parser_after_the_model_hides_no_cut_or_refusal(answer: AIMessage, why: str) -> None:
    """``model | StrOutputParser()``, as the docs suggest, answers a str that no longer says
    how the model stopped: a cut or refused answer was taken for a summary."""
    for use_async in (False, True):  # called directly: no summary shared by an earlier test
        chain = model(answer) | StrOutputParser()
        summarizer = ctxwin.summarizers.langchain(chain, use_async=use_async)
        with pytest.raises(SummarizerError) as info:
            call(summarizer)
        assert str(info.value) == f"langchain: {why}"


class Named(GenericFakeChatModel):
    """A fake chat model naming its model, as ChatOpenAI or ChatAnthropic do."""

    model_name: str = "gpt-a"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}


def named(model_name: str) -> Named:
    return Named(model_name=model_name, messages=iter([AIMessage("ok")]))


def test_bound_models_and_chains_of_other_models_do_not_share_summaries() -> None:
    """``model.bind(max_tokens=...)`` (how the docs set the limit) and ``model | parser``
    name no model of their own: every such summarizer was ``langchain::<digest>`` alike,
    and through a shared store they sent each other's summaries."""
    for wrap in (
        lambda m: m.bind(max_tokens=40),
        lambda m: m | StrOutputParser(),
        lambda m: ChatPromptTemplate.from_messages([("human", "{task}")]) | m,
    ):
        a, b = (ctxwin.summarizers.langchain(wrap(named(n))) for n in ("gpt-a", "gpt-b"))
        assert summarizer_name(a).startswith("langchain:gpt-a:")
        assert summarizer_name(b).startswith("langchain:gpt-b:")
        assert summarizer_name(a) == summarizer_name(
            ctxwin.summarizers.langchain(wrap(named("gpt-a")))
        )
    limits = [named("gpt-a").bind(max_tokens=n) for n in (40, 400)]
    assert len({summarizer_name(ctxwin.summarizers.langchain(m)) for m in limits}) == 2
    prompts = [
        ChatPromptTemplate.from_messages([("human", p + "{task}")]) | named("gpt-a") for p in "AB"
    ]
    assert len({summarizer_name(ctxwin.summarizers.langchain(c)) for c in prompts}) == 2


def test_an_object_with_invoke_that_is_no_runnable_is_called_as_it_is() -> None:
    class Plain:
        def invoke(self, messages: Any) -> str:
            return "plain summary"

    assert call(ctxwin.summarizers.langchain(Plain())) == "plain summary"


def test_content_blocks_are_read_as_their_text() -> None:
    blocks = AIMessage(content=[{"type": "text", "text": "one "}, {"type": "text", "text": "two"}])
    assert call(ctxwin.summarizers.langchain(model(blocks))) == "one two"


@pytest.mark.parametrize(
    "thinking",
    [
        {"type": "thinking", "thinking": [{"type": "text", "text": "user wants a list"}]},
        {"type": "thinking", "thinking": "user wants a list", "signature": "c2ln"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "a list"}]},
    ],
    ids=["mistral", "anthropic", "openai-responses"],
)
def test_the_reasoning_blocks_of_an_answer_are_no_part_of_the_summary(
    thinking: dict[str, Any],
) -> None:
    """A reasoning model's answer in blocks: only its text blocks make the summary, directly
    and through a parser."""
    answer = AIMessage(content=[thinking, {"type": "text", "text": "60 TypeErrors"}])
    for runnable in (model(answer), model(answer) | StrOutputParser()):
        assert call(ctxwin.summarizers.langchain(runnable)) == "60 TypeErrors"


def test_an_answer_of_another_type_is_a_typed_error() -> None:
    with pytest.raises(SummarizerError, match=r"^langchain: the runnable returned dict"):
        call(ctxwin.summarizers.langchain(RunnableLambda(lambda value: {"x": 1})))


@pytest.mark.parametrize(
    ("runnable", "kw", "message"),
    [
        (object(), {}, "ctxwin.summarizers.langchain needs a Runnable with invoke(), got object"),
        (
            object(),
            {"use_async": True},
            "ctxwin.summarizers.langchain needs a Runnable with ainvoke(), got object",
        ),
        (
            RunnableLambda(str),
            {"input": "text"},
            "ctxwin.summarizers.langchain: input must be 'messages' or 'variables', got 'text'",
        ),
    ],
)
def test_bad_arguments_are_refused_when_built(
    runnable: Any, kw: dict[str, Any], message: str
) -> None:
    with pytest.raises(SummarizerError) as info:
        ctxwin.summarizers.langchain(runnable, **kw)
    assert str(info.value) == message
