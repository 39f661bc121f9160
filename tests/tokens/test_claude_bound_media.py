"""OpenAI Chat and Responses bodies bound for Claude (LiteLLM's routes, the Agents SDK on
LitellmModel): their inline images and PDFs count as Claude bills what it is sent in their
place, not by OpenAI's tiles, and ``detail`` (which Claude does not read) changes nothing.
The same inline PDFs sent to OpenAI count by their pages as OpenAI reads them."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxwin
from ctxwin.testing import FakeCounter
from ctxwin.tokens._documents import PDF_PAGE_TOKENS
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES
from ctxwin.tokens._meter import IMAGE_TOKENS
from tests.tokens.documents import pdf
from tests.tokens.images import data_url, png

SHOT = data_url(png(1920, 1080))
CLAUDE = "anthropic/claude-sonnet-4-5"
PDF40 = base64.b64encode(pdf(40)).decode()
OPENAI_PAGE = OPENAI_IMAGES.tokens(1240, 1754, "high") + 1_000
"""A PDF page as OpenAI reads it: an A4 page's image at high detail (2 x 3 tiles), its text."""


def chat(model: str, *parts: dict[str, Any], policy: ctxwin.Policy | None = None) -> int:
    content = [{"type": "text", "text": "what is this?"}, *parts]
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    policy = policy or ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())
    return policy.apply(body, format="openai-chat").tokens


def responses(model: str, *parts: dict[str, Any]) -> int:
    content = [{"type": "input_text", "text": "what is this?"}, *parts]
    body = {"model": model, "input": [{"role": "user", "content": content}]}
    policy = ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())
    return policy.apply(body, format="openai-responses").tokens


@pytest.mark.parametrize("detail", ["auto", "low", "high"])
@pytest.mark.parametrize("model", [CLAUDE, "bedrock/us.anthropic.claude-sonnet-4-5-v1:0"])
def test_a_chat_image_bound_for_claude_counts_by_its_area_whatever_its_detail(
    model: str, detail: str
) -> None:
    part = {"type": "image_url", "image_url": {"url": SHOT, "detail": detail}}
    assert chat(model, part) - chat(model) == CLAUDE_IMAGES.tokens(1920, 1080) > 2_700


def test_a_responses_image_bound_for_claude_counts_by_its_area() -> None:
    part = {"type": "input_image", "image_url": SHOT, "detail": "low"}
    assert responses("claude-sonnet-4-5", part) - responses("claude-sonnet-4-5") == (
        CLAUDE_IMAGES.tokens(1920, 1080)
    )
    assert responses("gpt-4o", part) - responses("gpt-4o") == 85  # OpenAI's: its tiles


@pytest.mark.parametrize("data", ["data:application/pdf;base64," + PDF40, PDF40])
def test_an_inline_pdf_bound_for_claude_counts_by_its_pages(data: str) -> None:
    """A data URL, or the base64 alone beside a ``.pdf`` filename (as the API takes it)."""
    file = {"type": "file", "file": {"file_data": data, "filename": "r.pdf"}}
    assert chat(CLAUDE, file) - chat(CLAUDE) == 40 * PDF_PAGE_TOKENS
    item = {"type": "input_file", "file_data": data, "filename": "r.pdf"}
    assert responses("claude-sonnet-4-5", item) - responses("claude-sonnet-4-5") == (
        40 * PDF_PAGE_TOKENS
    )


@pytest.mark.parametrize("data", ["data:application/pdf;base64," + PDF40, PDF40])
def test_an_inline_pdf_bound_for_openai_counts_by_its_pages(data: str) -> None:
    """It counted a flat 1,000 tokens whatever its pages (40 pages: 1,000), though OpenAI
    puts the text and an image of every page in the context."""
    file = {"type": "file", "file": {"file_data": data, "filename": "r.pdf"}}
    assert chat("gpt-4o", file) - chat("gpt-4o") == 40 * OPENAI_PAGE == 84_200
    item = {"type": "input_file", "file_data": data, "filename": "r.pdf"}
    assert responses("gpt-4o", item) - responses("gpt-4o") == 40 * OPENAI_PAGE


def test_a_responses_pdf_at_low_detail_counts_its_page_images_at_the_base() -> None:
    """``detail`` on an ``input_file`` sets how its page images are read; the text stays."""
    item = {"type": "input_file", "file_data": PDF40, "filename": "r.pdf", "detail": "low"}
    assert responses("gpt-4o", item) - responses("gpt-4o") == 40 * (85 + 1_000)


@pytest.mark.parametrize(
    "part",
    [
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x"}},
        {"type": "file", "file": {"file_data": PDF40, "filename": "r.docx"}},
        {"type": "file", "file": {"file_data": PDF40}},
    ],
    ids=["file-id", "no-pages", "not-a-pdf-name", "no-name"],
)
@pytest.mark.parametrize("model", ["gpt-4o", CLAUDE])
def test_a_file_whose_pages_are_not_read_keeps_the_flat_estimate(
    part: dict[str, Any], model: str
) -> None:
    assert chat(model, part) - chat(model) == IMAGE_TOKENS


def test_one_block_counted_for_two_providers_keeps_a_count_for_each() -> None:
    """The block memo is shared across a policy's requests: the same part sent to GPT and
    then to Claude must not take the count of the other rule."""
    policy = ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())
    part = {"type": "image_url", "image_url": {"url": SHOT, "detail": "high"}}
    content = [{"type": "text", "text": "what is this?"}, part]
    messages = [{"role": "user", "content": content}]
    gpt = policy.apply({"model": "gpt-4o", "messages": messages}, format="openai-chat").tokens
    claude = policy.apply({"model": CLAUDE, "messages": messages}, format="openai-chat").tokens
    assert claude - gpt == CLAUDE_IMAGES.tokens(1920, 1080) - OPENAI_IMAGES.tokens(1920, 1080)
    again = policy.apply({"model": "gpt-4o", "messages": messages}, format="openai-chat").tokens
    assert again == gpt


def test_the_claude_thinking_chat_adapter_counts_images_as_claude_bills_them() -> None:
    """LiteLLM's hook picks it for a Claude route whatever the model is called (a group)."""
    from ctxwin.formats._chat_thinking import ClaudeThinkingChatAdapter

    part = {"type": "image_url", "image_url": {"url": SHOT, "detail": "low"}}
    policy = ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())

    def tokens(*parts: dict[str, Any]) -> int:
        content = [{"type": "text", "text": "what is this?"}, *parts]
        body = {"model": "my-group", "messages": [{"role": "user", "content": content}]}
        return policy.apply(body, format=ClaudeThinkingChatAdapter()).tokens

    assert tokens(part) - tokens() == CLAUDE_IMAGES.tokens(1920, 1080)
