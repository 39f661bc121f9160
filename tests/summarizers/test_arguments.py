"""A ready summarizer built with a wrong argument is refused when it is built, with a typed
error saying what to pass instead, not at its first request (where the step would quietly
fall back on every result); and the LangChain summarizer reads the providers' stop reasons."""

from __future__ import annotations

from typing import Any, get_args

import anthropic as anthropic_sdk
import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, SecretStr

import ctxwin.summarizers
from ctxwin import SummarizerError
from tests.summarizers.helpers import (
    Server,
    anthropic_answer,
    anthropic_client,
    apply,
    call,
    openai_answer,
    openai_client,
)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"options": {"temprature": 0}},
            "ctxwin.summarizers.openai: options ['temprature'] are not parameters of "
            "Completions.create(); pass fields the SDK does not know in "
            "options={'extra_body': {...}}",
        ),
        (
            {"options": ["temperature"]},
            "ctxwin.summarizers.openai: options must be a mapping of parameter names, got list",
        ),
        (
            {"options": {"stream": True}},
            "ctxwin.summarizers.openai: options may not set 'stream': the summarizer reads "
            "whole answers",
        ),
        (
            {"options": {"max_tokens": 600}},
            "ctxwin.summarizers.openai: options may not set 'max_tokens': pass max_tokens= "
            "(and limit_param=)",
        ),
        (
            {"limit_param": "max_output_tokens"},
            "ctxwin.summarizers.openai: limit_param must be 'max_completion_tokens' or "
            "'max_tokens', got 'max_output_tokens'",
        ),
        ({"prompt": 7}, "ctxwin.summarizers.openai: prompt must be a str, got int"),
    ],
)
def test_bad_openai_arguments_are_refused_when_built(kw: dict[str, Any], message: str) -> None:
    client = openai_client("sync", Server(openai_answer()))
    with pytest.raises(SummarizerError) as info:
        ctxwin.summarizers.openai(client, model="m", **kw)
    assert (str(info.value), info.value.provider) == (message, "openai")


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"options": {"temprature": 0}},
            "ctxwin.summarizers.anthropic: options ['temprature'] are not parameters of "
            "Messages.create(); pass fields the SDK does not know in "
            "options={'extra_body': {...}}",
        ),
        (
            {"options": {"system": "x"}},
            "ctxwin.summarizers.anthropic: options may not set 'system': pass prompt=",
        ),
        (
            {"options": {"stream": True}},
            "ctxwin.summarizers.anthropic: options may not set 'stream': the summarizer "
            "reads whole answers",
        ),
        (
            {"prompt": [{"type": "text", "text": "x"}]},
            "ctxwin.summarizers.anthropic: prompt must be a str, got list",
        ),
    ],
)
def test_bad_anthropic_arguments_are_refused_when_built(kw: dict[str, Any], message: str) -> None:
    client = anthropic_client("sync", Server(anthropic_answer()))
    with pytest.raises(SummarizerError) as info:
        ctxwin.summarizers.anthropic(client, model="m", **kw)
    assert (str(info.value), info.value.provider) == (message, "anthropic")


def test_the_sdks_own_options_still_pass() -> None:
    """Known parameters, extra_body and a per-request timeout reach the request."""
    server = Server(openai_answer())
    s = ctxwin.summarizers.openai(
        openai_client("sync", server),
        model="m",
        options={"temperature": 0, "timeout": 5.0, "extra_body": {"top_k": 3}},
    )
    assert call(s) == "summary: 60 TypeErrors"
    assert (server.sent["temperature"], server.sent["top_k"]) == (0, 3)


def test_a_langchain_prompt_that_is_not_text_is_refused_when_built() -> None:
    with pytest.raises(SummarizerError) as info:
        ctxwin.summarizers.langchain(RunnableLambda(str), prompt=1)  # type: ignore[arg-type]
    assert str(info.value) == "ctxwin.summarizers.langchain: prompt must be a str, got int"


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            AIMessage("partial", response_metadata={"finish_reason": "content_filter"}),
            "refused or the answer was filtered (finish_reason=content_filter)",
        ),
        (
            AIMessage("I cannot", response_metadata={"stop_reason": "refusal"}),
            "refused or the answer was filtered (stop_reason=refusal)",
        ),
        (
            AIMessage("partial", response_metadata={"finish_reason": "SAFETY"}),
            "refused or the answer was filtered (finish_reason=SAFETY)",
        ),
        (
            AIMessage("partial", response_metadata={"stopReason": "guardrail_intervened"}),
            "refused or the answer was filtered (stopReason=guardrail_intervened)",
        ),
        (
            AIMessage("Sorry, no", additional_kwargs={"refusal": "Sorry, no"}),
            "refused or the answer was filtered (refusal: Sorry, no)",
        ),
        (
            AIMessage("partial", response_metadata={"finish_reason": "MAX_TOKENS"}),
            "summary was cut at the model's output limit",
        ),
        (
            AIMessage("partial", response_metadata={"stopReason": "max_tokens"}),
            "summary was cut at the model's output limit",
        ),
        (
            AIMessage("partial", response_metadata={"done_reason": "length"}),
            "summary was cut at the model's output limit",
        ),
    ],
    ids=[
        "openai-filter",
        "anthropic-refusal",
        "gemini-safety",
        "bedrock-guardrail",
        "openai-refusal",
        "gemini-cut",
        "bedrock-cut",
        "ollama-cut",
    ],
)
def test_a_langchain_answer_refused_filtered_or_cut_is_no_summary(
    answer: AIMessage, reason: str, use_async: bool
) -> None:
    runnable = RunnableLambda(lambda value: answer)
    s = ctxwin.summarizers.langchain(runnable, use_async=use_async)
    result = apply(s, "aapply" if use_async else "apply")
    assert [e.fallback for e in result.report.edits] == [
        f"summarizer_error: SummarizerError: langchain: the model {reason}"
        if reason.startswith("refused")
        else f"summarizer_error: SummarizerError: langchain: the {reason}"
    ]


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        (
            {"stop_reason": "pause_turn"},
            "the model paused its turn before finishing (stop_reason=pause_turn)",
        ),
        (
            {"stop_reason": "model_context_window_exceeded"},
            "the summary was cut at the model's context window "
            "(stop_reason=model_context_window_exceeded)",
        ),
        (
            {"stopReason": "model_context_window_exceeded"},
            "the summary was cut at the model's context window "
            "(stopReason=model_context_window_exceeded)",
        ),
        (
            {"stopReason": "malformed_model_output"},
            "the model stopped before finishing (stopReason=malformed_model_output)",
        ),
        (
            {"finish_reason": "model_length"},
            "the summary was cut at the model's context window (finish_reason=model_length)",
        ),
        ({"finish_reason": "error"}, "the model stopped before finishing (finish_reason=error)"),
        ({"finish_reason": "OTHER"}, "the model stopped before finishing (finish_reason=OTHER)"),
        (
            {"finish_reason": "MALFORMED_FUNCTION_CALL"},
            "the model stopped before finishing (finish_reason=MALFORMED_FUNCTION_CALL)",
        ),
        (
            {"finish_reason": "LANGUAGE"},
            "the model refused or the answer was filtered (finish_reason=LANGUAGE)",
        ),
    ],
    ids=[
        "anthropic-pause",
        "anthropic-window",
        "bedrock-window",
        "bedrock-malformed",
        "mistral-window",
        "mistral-error",
        "gemini-other",
        "gemini-malformed-call",
        "gemini-language",
    ],
)
def test_a_langchain_answer_paused_or_stopped_early_is_no_summary(
    metadata: dict[str, str], reason: str
) -> None:
    """ChatAnthropic's ``pause_turn`` (which ``ctxwin.summarizers.anthropic`` refuses), a
    window exceeded, or a provider's error stop: the unfinished text was kept as the
    summary, and memoized."""
    answer = AIMessage("Failing tests: module_0, module_1", response_metadata=metadata)
    result = apply(ctxwin.summarizers.langchain(RunnableLambda(lambda value: answer)))
    assert [e.fallback for e in result.report.edits] == [
        f"summarizer_error: SummarizerError: langchain: {reason}"
    ]


FINISHED = {"end_turn", "stop_sequence", "tool_use"}
"""Anthropic's stop reasons after which the text is whole (a tool call is read from the
message's ``tool_calls`` by the LangChain summarizer, from ``tool_use`` by the Anthropic
one, each with its own message)."""


@pytest.mark.parametrize("stop", sorted(set(get_args(anthropic_sdk.types.StopReason)) - FINISHED))
def test_langchain_and_anthropic_refuse_the_same_stop_reasons(stop: str) -> None:
    """Every unfinished stop reason of the Anthropic SDK, read alike by both summarizers."""
    client = anthropic_client("sync", Server(anthropic_answer("partial", stop=stop)))
    direct = ctxwin.summarizers.anthropic(client, model="m")
    answer = AIMessage("partial", response_metadata={"stop_reason": stop})
    through = ctxwin.summarizers.langchain(RunnableLambda(lambda value: answer))
    for s in (direct, through):
        with pytest.raises(SummarizerError):
            call(s)


def test_a_langchain_models_key_is_masked_in_a_failure() -> None:
    class Model:
        """A chat model holding its key, whose error quotes the request's headers."""

        openai_api_key = "sk-lc-secret-0003"

        def invoke(self, value: Any) -> Any:
            raise RuntimeError(f"401 from proxy: Authorization: Bearer {self.openai_api_key}")

    with pytest.raises(SummarizerError) as info:
        call(ctxwin.summarizers.langchain(Model()))
    assert str(info.value) == ("langchain: RuntimeError: 401 from proxy: Authorization: Bearer ***")


def test_every_secret_field_of_a_langchain_model_is_masked_in_a_failure() -> None:
    """Each provider's model names its key field its own way (``mistral_api_key``,
    ``groq_api_key``...): every ``SecretStr`` field is masked, whatever its name (s50-2)."""

    class Model(BaseModel):
        """A chat model holding its key as a SecretStr, whose error quotes the header."""

        mistral_api_key: SecretStr = SecretStr("mi-lc-secret-0004")

        def invoke(self, value: Any) -> Any:
            key = self.mistral_api_key.get_secret_value()
            raise RuntimeError(f"401 from proxy: Authorization: Bearer {key}")

    with pytest.raises(SummarizerError) as info:
        call(ctxwin.summarizers.langchain(Model()))
    assert str(info.value) == ("langchain: RuntimeError: 401 from proxy: Authorization: Bearer ***")
