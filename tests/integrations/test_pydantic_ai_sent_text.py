"""Parts pydantic-ai sends to the model as text are counted: an instruction change (sent
as a ``<pyai:context>`` element) and a user's speech (sent as its transcript)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    InstructionDeltaPart,
    ModelRequest,
    ModelResponse,
    SpeechPart,
    TextPart,
    UserPromptPart,
)

import ctxwin
from ctxwin.integrations.pydantic_ai import process_history
from ctxwin.testing import FakeCounter
from tests.tokens.images import png

WORDS = " ".join(f"rule{i}" for i in range(400))


def tokens(parts: list[Any]) -> int:
    processor = process_history(ctxwin.Policy({}, counter=FakeCounter()))
    history = [
        ModelRequest(parts=[UserPromptPart("start")]),
        ModelResponse(parts=[TextPart("ok")]),
        ModelRequest(parts=[UserPromptPart("go on"), *parts]),
    ]
    asyncio.run(processor(history))
    assert processor.last_result is not None
    return processor.last_result.report.tokens_before


def test_an_instruction_change_counts_as_the_text_sent() -> None:
    change = InstructionDeltaPart(id="paths", content=WORDS)
    assert tokens([change]) - tokens([]) >= 400


def test_a_users_speech_counts_as_its_transcript() -> None:
    speech = SpeechPart(speaker="user", transcript=WORDS)
    assert tokens([speech]) - tokens([]) >= 400


def test_a_prompted_outputs_schema_prompt_counts() -> None:
    """pydantic-ai adds the schema prompt of a ``PromptedOutput`` to the instructions when
    the model prepares the request, after the capability's hook: it is counted all the
    same."""
    from pydantic import BaseModel
    from pydantic_ai import Agent, PromptedOutput
    from pydantic_ai.models.function import FunctionModel

    from ctxwin.integrations.pydantic_ai import ContextWindow

    class Incident(BaseModel):
        title: str
        root_cause: str
        follow_ups: list[str]

    def model(messages: list[Any], info: Any) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart('{"title": "t", "root_cause": "r", "follow_ups": []}')]
        )

    counted = []
    for output in (str, PromptedOutput(Incident)):
        capability = ContextWindow(ctxwin.Policy({}, counter=FakeCounter()))
        agent = Agent(FunctionModel(model), capabilities=[capability], output_type=output)
        asyncio.run(agent.run("report"))
        assert capability.last_result is not None
        counted.append(capability.last_result.report.tokens_before)
    assert counted[1] - counted[0] >= 20  # the schema's words: title, root_cause, follow_ups...


def test_a_native_outputs_schema_counts() -> None:
    """A ``NativeOutput``'s schema goes to the provider as its structured-output format,
    which the provider puts in the prompt: it is counted."""
    from pydantic import BaseModel, create_model
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.profiles import ModelProfile

    from ctxwin.integrations.pydantic_ai import ContextWindow

    fields = {f"field_{i}": (str, ...) for i in range(40)}
    Report: type[BaseModel] = create_model("Report", **fields)  # type: ignore[call-overload]
    answer = "{" + ",".join(f'"field_{i}": "x"' for i in range(40)) + "}"

    def model(messages: list[Any], info: Any) -> ModelResponse:
        return ModelResponse(parts=[TextPart(answer)])

    profile = ModelProfile(supports_json_schema_output=True)
    counted = []
    for output in (str, NativeOutput(Report)):
        capability = ContextWindow(ctxwin.Policy({}))  # tiktoken: the schema is JSON text
        served = FunctionModel(model, profile=profile)
        agent = Agent(served, capabilities=[capability], output_type=output)
        asyncio.run(agent.run("report"))
        assert capability.last_result is not None
        counted.append(capability.last_result.report.tokens_before)
    assert counted[1] - counted[0] >= 80  # 40 fields, each a name and a type at least


def test_a_file_the_model_made_counts_where_the_model_is_sent_it_back() -> None:
    """A ``FilePart`` in a response (an image a Gemini model drew) goes back to Google's
    models as inline data: it counted nothing. pydantic-ai's Anthropic and OpenAI models do
    not send it back, and it counts nothing there."""
    from pydantic_ai.messages import BinaryContent, FilePart

    from ctxwin.integrations._pydantic_ai_parts import Reader, response_blocks

    image = FilePart(BinaryContent(png(1024, 1024), media_type="image/png"))
    processor = process_history(ctxwin.Policy({}))
    history = [
        ModelRequest(parts=[UserPromptPart("draw a cat")]),
        ModelResponse(parts=[TextPart("here"), image]),
        ModelRequest(parts=[UserPromptPart("again")]),
    ]
    asyncio.run(processor(history))
    assert processor.last_result is not None
    with_image = processor.last_result.report.tokens_before
    history[1] = ModelResponse(parts=[TextPart("here")])
    asyncio.run(processor(history))
    assert processor.last_result is not None
    assert with_image - processor.last_result.report.tokens_before > 1000  # by its size
    response = ModelResponse(parts=[TextPart("here"), image])
    for served in ("anthropic", "openai-chat", "openai-responses"):
        blocks = response_blocks(response, Reader(served=served), earlier=False)  # type: ignore[arg-type]
        assert [b["type"] for b, _ in blocks] == ["text"]
