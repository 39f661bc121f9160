"""pydantic-ai media: an inline PDF (``BinaryContent`` of ``application/pdf``, in a user
prompt or a tool return) counts by its pages at the figure of the model serving the request
(Claude's for ``FunctionModel`` and ``AnthropicModel``, OpenAI's for its models, Gemini's for
``GoogleModel``), as ctxwin counts the body that model is sent; an image by its size; media
by URL at the flat estimate."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow
from ctxwin.testing import FakeCounter
from ctxwin.tokens._images import CLAUDE_IMAGES
from tests.tokens.documents import pdf
from tests.tokens.images import png

CLAUDE_PAGE = 3_000
OPENAI_PAGE = 2_105
GEMINI_PAGE = 560


def _agent_tokens(item: Any, where: str) -> int:
    """The tokens the report counts for a ``FunctionModel`` run whose user prompt (or whose
    one tool's return) holds ``item``."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if where == "tool" and len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("fetch", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("read")])

    capability = ContextWindow(ctxwin.Policy({}, counter=FakeCounter()), observe=False)
    agent = Agent(FunctionModel(model), capabilities=[capability])

    @agent.tool_plain
    def fetch() -> list[Any]:
        """The report."""
        return ["the report", item]

    prompt: list[Any] = ["summarize the report", item] if where == "prompt" else ["go"]
    asyncio.run(agent.run(prompt))
    assert capability.last_result is not None
    return capability.last_result.report.tokens_before


def _pdf(pages: int) -> BinaryContent:
    return BinaryContent(data=pdf(pages), media_type="application/pdf")


@pytest.mark.parametrize("where", ["prompt", "tool"])
def test_an_inline_pdf_counts_its_pages_at_claudes_figure(where: str) -> None:
    """A 40-page PDF counted 1,000 tokens, as many as a one-page one: pydantic-ai's inline
    PDF became a document block without its data."""
    added = _agent_tokens(_pdf(40), where) - _agent_tokens(_pdf(1), where)
    assert added == 39 * CLAUDE_PAGE


def test_an_inline_image_counts_by_its_size() -> None:
    large = BinaryContent(data=png(1500, 1500), media_type="image/png")
    small = BinaryContent(data=png(10, 10), media_type="image/png")
    added = _agent_tokens(large, "prompt") - _agent_tokens(small, "prompt")
    assert added == CLAUDE_IMAGES.tokens(1500, 1500) - CLAUDE_IMAGES.tokens(10, 10)


def test_media_by_url_and_a_pdf_without_pages_count_the_flat_estimate() -> None:
    """Their size is not in the request (a URL), or the scan finds no page: 1,000 tokens."""
    baseline = _agent_tokens("nothing", "prompt")
    for item in (
        DocumentUrl(url="https://x.test/r.pdf"),
        ImageUrl(url="https://x.test/a.png"),
        BinaryContent(data=b"%PDF-1.5\nno pages here", media_type="application/pdf"),
    ):
        assert _agent_tokens(item, "prompt") - baseline == 1_000 - 1  # the text "nothing"


# ------------------------------------------------------------------ as the model is sent it

SERVED = {
    "chat": ("openai-chat", OPENAI_PAGE),
    "responses": ("openai-responses", OPENAI_PAGE),
    "anthropic": ("anthropic", CLAUDE_PAGE),
}


def _served(kind: str, capture: Any) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

    from tests.integrations import pai_wire_kit as kit

    if kind == "anthropic":
        return kit.anthropic_model(capture)
    cls = OpenAIChatModel if kind == "chat" else OpenAIResponsesModel
    return cls("gpt-4o", provider=kit.openai_provider(capture))


def _sent(kind: str, pages: int, where: str) -> tuple[int, int]:
    """What the report counts of the request holding a PDF of ``pages`` pages, and what
    ctxwin counts of the body the model was sent, in that body's own format."""
    pytest.importorskip("httpx2")
    from tests.integrations import pai_wire_kit as kit

    replies = {"chat": kit.CHAT_REPLY, "responses": kit.RESPONSES_REPLY}
    capture = kit.Capture(replies.get(kind, kit.ANTHROPIC_REPLY))
    capability = ContextWindow(ctxwin.Policy({"tokenizer": "o200k_base"}), observe=False)
    agent = Agent(_served(kind, capture), capabilities=[capability])
    history = _history(_pdf(pages)) if where == "tool" else []
    prompt: list[Any] = ["summarize the report", _pdf(pages)] if where == "prompt" else ["go on"]
    with contextlib.suppress(Exception):  # the fake reply may not end the run
        asyncio.run(agent.run(prompt, message_history=history))
    assert capability.last_result is not None
    body = capture.bodies[0]
    policy = ctxwin.Policy({"tokenizer": "o200k_base"})
    sent = policy.apply(body, format=SERVED[kind][0], model=body.get("model")).report
    return capability.last_result.report.tokens_before, sent.tokens_before


def _history(item: Any) -> list[ModelMessage]:
    """A run's history: a call, and its return holding ``item``."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

    returned = ToolReturnPart("fetch", ["the report", item], tool_call_id="c1")
    return [
        ModelRequest(parts=[UserPromptPart("read the report")]),
        ModelResponse(parts=[ToolCallPart("fetch", {}, tool_call_id="c1")]),
        ModelRequest(parts=[returned]),
        ModelResponse(parts=[TextPart("read")]),
    ]


@pytest.mark.parametrize("where", ["prompt", "tool"])
@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_an_inline_pdf_counts_at_the_figure_of_the_model_serving_it(kind: str, where: str) -> None:
    """Claude's 3,000 tokens a page, OpenAI's 2,105: what ctxwin counts of the body each
    model is sent (a Chat ``file`` part, a Responses ``input_file``, an Anthropic
    ``document``); it counted 1,000 tokens for any PDF."""
    counted, sent = _sent(kind, 40, where)
    counted_one, sent_one = _sent(kind, 1, where)
    assert counted - counted_one == 39 * SERVED[kind][1]
    if kind == "chat" and where == "tool":  # the user message pydantic-ai sends the file in
        assert abs(sent - sent_one - 39 * OPENAI_PAGE) < 10  # frames it by its id: not counted
        return
    assert sent - sent_one == 39 * SERVED[kind][1]
    assert counted == sent


def test_an_inline_pdf_counts_at_geminis_figure_for_a_google_model() -> None:
    """``GoogleModel`` sends the PDF as ``inlineData``, which Gemini bills 560 tokens a page
    (ctxwin's Gemini adapter), and an image 1,120 whatever its size: not Claude's figures.
    (A stand-in named as pydantic-ai's class: the model is recognized by its class name.)"""
    from ctxwin.formats._gemini_media import IMAGE_TOKENS, PDF_PAGE_TOKENS

    class GoogleModel(FunctionModel):
        pass

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("read")])

    def tokens(item: Any) -> int:
        capability = ContextWindow(ctxwin.Policy({}, counter=FakeCounter()), observe=False)
        agent = Agent(GoogleModel(reply), capabilities=[capability])
        asyncio.run(agent.run("go on", message_history=_history(item)))
        assert capability.last_result is not None
        return capability.last_result.report.tokens_before

    assert PDF_PAGE_TOKENS == GEMINI_PAGE
    assert tokens(_pdf(40)) - tokens(_pdf(1)) == 39 * GEMINI_PAGE
    image = BinaryContent(data=png(1500, 1500), media_type="image/png")
    assert tokens(image) - tokens(_pdf(1)) == IMAGE_TOKENS - GEMINI_PAGE
