"""Anthropic's inline images count by their size as Claude bills them, its inline PDFs by
their pages; what ctxwin cannot size (a URL, a file id) keeps the flat estimate."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxwin
from ctxwin.formats._anthropic_media import media_part_tokens
from ctxwin.testing import FakeCounter
from ctxwin.tokens._documents import PDF_PAGE_TOKENS
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES
from ctxwin.tokens._meter import IMAGE_TOKENS
from tests.tokens.documents import pdf
from tests.tokens.images import jpeg, png


def image(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def document(data: bytes) -> dict[str, Any]:
    source = {
        "type": "base64",
        "media_type": "application/pdf",
        "data": base64.b64encode(data).decode(),
    }
    return {"type": "document", "source": source}


def tokens(*blocks: dict[str, Any], in_result: bool = False) -> int:
    """The tokens of an Anthropic request whose last user message holds ``blocks`` (in a
    tool result when ``in_result``)."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {}}
    content: list[Any] = [{"type": "text", "text": "look"}, *blocks]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if in_result:
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages}
    policy = ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())
    result = policy.apply(body, format="anthropic")
    assert result.request == body  # counted, not changed
    return result.tokens


@pytest.mark.parametrize("in_result", [False, True], ids=["message", "tool_result"])
def test_an_inline_image_counts_as_claude_bills_its_size(in_result: bool) -> None:
    """A 1920 x 1080 screenshot counted 1,000 tokens; Claude bills about 2,700."""
    base = tokens(in_result=in_result)
    assert tokens(image(png(1920, 1080)), in_result=in_result) - base == 2765
    shot = image(jpeg(1280, 800), "image/jpeg")
    assert tokens(shot, in_result=in_result) - base == CLAUDE_IMAGES.tokens(1280, 800) == 1366


@pytest.mark.parametrize("in_result", [False, True], ids=["message", "tool_result"])
def test_an_inline_pdf_counts_by_its_pages(in_result: bool) -> None:
    """An 80-page PDF counted 1,000 tokens; Claude bills 1,500 to 3,000 a page and more."""
    base = tokens(in_result=in_result)
    assert tokens(document(pdf(80)), in_result=in_result) - base == 80 * PDF_PAGE_TOKENS
    assert tokens(document(pdf(5, packed=True)), in_result=in_result) - base == 5 * PDF_PAGE_TOKENS


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        image(b"not an image at all"),
        document(b"%PDF-1.4\n%%EOF"),  # no page object
    ],
    ids=["image-url", "image-file", "pdf-url", "no-size", "no-pages"],
)
def test_media_ctxwin_cannot_size_keeps_the_flat_estimate(block: dict[str, Any]) -> None:
    assert tokens(block) - tokens() == IMAGE_TOKENS
    assert media_part_tokens(block) is None


def test_a_text_document_still_counts_by_its_text() -> None:
    text = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "a b c"},
    }
    assert media_part_tokens(text) is None
    assert tokens(text) - tokens() < 20


def test_an_image_an_openai_model_is_sent_counts_its_tiles() -> None:
    """pydantic-ai writes an OpenAI model's request in Anthropic's shape: its images are
    billed by OpenAI's rule, which its adapter applies to Anthropic's blocks."""
    from ctxwin.integrations._pydantic_ai_served import ADAPTER

    block = image(png(1024, 1024))
    rule = ADAPTER.overheads.images
    assert rule is not None
    assert rule(block) == OPENAI_IMAGES.tokens(1024, 1024) == 765
    assert media_part_tokens(block) == CLAUDE_IMAGES.tokens(1024, 1024) == 1399


def test_a_pdf_an_openai_model_is_sent_counts_its_pages_as_openai_reads_them() -> None:
    """pydantic-ai sends an OpenAI model a PDF as a ``file`` part: its pages count as the
    Chat adapter counts them (an A4 page's image at high detail, and its text), not Claude's."""
    from ctxwin.integrations._pydantic_ai_served import ADAPTER

    block = document(pdf(40))
    rule = ADAPTER.overheads.images
    assert rule is not None
    assert rule(block) == 40 * (OPENAI_IMAGES.tokens(1240, 1754, "high") + 1_000)
    assert media_part_tokens(block) == 40 * PDF_PAGE_TOKENS
