"""Inline images and PDFs in LangChain messages, in the shapes the chat models take them
(ChatAnthropic's own ``image`` and ``document`` blocks, LangChain's standard ``image`` and
``file`` blocks in their v1 and v0 shapes, Chat ``image_url`` parts): counted as the
provider behind the chat model bills them, Claude's rules for a Claude model, OpenAI's
tiles otherwise."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import ctxwin
from ctxwin.integrations._lc import LangChainRun
from ctxwin.integrations.langchain import CtxwinMiddleware
from ctxwin.tokens._documents import PDF_PAGE_TOKENS
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES
from ctxwin.tokens._meter import IMAGE_TOKENS
from tests.integrations.lc_kit import RecordingModel
from tests.tokens.documents import pdf
from tests.tokens.images import data_url, png

IMG = base64.b64encode(png(1500, 1500)).decode("ascii")
DOC = base64.b64encode(pdf(40)).decode("ascii")
CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-4.1"

IMAGES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": IMG},
    },
    "v1": {"type": "image", "base64": IMG, "mime_type": "image/png"},
    "v0": {"type": "image", "source_type": "base64", "data": IMG, "mime_type": "image/png"},
    "v1 data url": {"type": "image", "url": data_url(png(1500, 1500))},
    "chat": {"type": "image_url", "image_url": {"url": data_url(png(1500, 1500))}},
}
DOCUMENTS: dict[str, dict[str, Any]] = {
    "anthropic": {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": DOC},
    },
    "v1": {"type": "file", "base64": DOC, "mime_type": "application/pdf"},
    "v0": {"type": "file", "source_type": "base64", "data": DOC, "mime_type": "application/pdf"},
    "chat": {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64," + DOC, "filename": "r.pdf"},
    },
}
OPENAI_PAGE = OPENAI_IMAGES.tokens(1240, 1754, "high") + 1_000
"""A PDF page as OpenAI reads it: an A4 page's image at high detail, and its text."""


def added(block: dict[str, Any], model: str, where: str = "human") -> int:
    """What ``block`` adds to a request for ``model``, next to a text block."""

    def tokens(blocks: list[dict[str, Any]]) -> int:
        content: list[Any] = [{"type": "text", "text": "look at this"}, *blocks]
        if where == "human":
            messages: list[Any] = [HumanMessage(content)]
        else:
            call = {"name": "screenshot", "args": {}, "id": "c1"}
            messages = [HumanMessage("go"), AIMessage("", tool_calls=[call])]
            messages.append(ToolMessage(content, tool_call_id="c1"))
        run = LangChainRun(ctxwin.load_policy({}))
        return run.apply(run.body(messages), model).report.tokens_before

    return tokens([block]) - tokens([])


@pytest.mark.parametrize("shape", sorted(IMAGES))
def test_an_inline_image_counts_by_claudes_area_rule_for_a_claude_model(shape: str) -> None:
    assert added(IMAGES[shape], CLAUDE) == CLAUDE_IMAGES.tokens(1500, 1500)


@pytest.mark.parametrize("shape", sorted(IMAGES))
def test_an_inline_image_counts_openai_tiles_for_another_model(shape: str) -> None:
    assert added(IMAGES[shape], GPT) == OPENAI_IMAGES.tokens(1500, 1500)


@pytest.mark.parametrize("shape", sorted(DOCUMENTS))
@pytest.mark.parametrize(("model", "page"), [(CLAUDE, PDF_PAGE_TOKENS), (GPT, OPENAI_PAGE)])
def test_an_inline_pdf_counts_by_its_pages(shape: str, model: str, page: int) -> None:
    """As the Chat adapter counts a ``file`` part for the same model: a Chat part counted
    1,000 tokens for an OpenAI model, the other shapes Claude's 3,000 a page."""
    assert added(DOCUMENTS[shape], model) == 40 * page


def test_an_image_in_a_tool_message_counts_by_its_size() -> None:
    assert added(IMAGES["v1"], CLAUDE, where="tool") == CLAUDE_IMAGES.tokens(1500, 1500)


def test_media_whose_size_is_not_in_the_request_counts_its_flat_estimate() -> None:
    url = {"type": "image", "url": "https://example.com/a.png"}
    text_file = {"type": "file", "base64": IMG, "mime_type": "text/plain"}
    no_pdf = {"type": "file", "base64": IMG, "mime_type": "application/pdf"}
    by_id = {"type": "image", "file_id": "file-abc"}
    for block in (url, text_file, no_pdf, by_id):
        assert added(block, CLAUDE) == IMAGE_TOKENS


def test_the_middleware_counts_a_pdf_for_the_agents_claude_model() -> None:
    class Claude(RecordingModel):
        model: str = CLAUDE

    def tokens(content: list[Any]) -> int:
        mw = CtxwinMiddleware(ctxwin.load_policy({}))
        model = Claude(messages=iter([AIMessage("ok")]))
        create_agent(model, [], middleware=[mw]).invoke({"messages": [HumanMessage(content)]})
        assert mw.last_result is not None
        return mw.last_result.report.tokens_before

    text = {"type": "text", "text": "summarize this"}
    assert tokens([text, DOCUMENTS["v1"]]) - tokens([text]) == 40 * PDF_PAGE_TOKENS
