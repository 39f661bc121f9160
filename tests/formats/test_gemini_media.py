"""Gemini's inline PDFs count by their pages, its images at Gemini 3's default image cost;
what ctxwin cannot size (a PDF by URI, audio, video) keeps the flat estimate."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxwin
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter
from ctxwin.tokens._meter import IMAGE_TOKENS
from tests.formats.test_gemini import fc, fr
from tests.tokens.documents import pdf
from tests.tokens.images import png

PAGE = 560
"""Gemini 3's default for a PDF page (MEDIA_RESOLUTION_MEDIUM), the most it bills one."""
IMAGE = 1120
"""Gemini 3's default for an image (MEDIA_RESOLUTION_HIGH), the most it bills one."""


def inline(data: bytes, mime: str, snake: bool = False) -> dict[str, Any]:
    if snake:
        return {"inline_data": {"mime_type": mime, "data": data}}
    return {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}


def tokens(*parts: dict[str, Any], in_result: bool = False) -> int:
    """The tokens of a Gemini request whose last user content holds ``parts`` (in a
    function response's ``parts`` when ``in_result``), bytes counted as the base64 text
    they go out as."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "look"}, *parts]}]
    if in_result:
        response = fr("c1", "screenshot", {"output": "taken"})
        response["functionResponse"]["parts"] = list(parts)
        contents = [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [fc("c1", "screenshot")]},
            {"role": "user", "parts": [response]},
        ]
    body = {"contents": contents}
    adapter = get_adapter("gemini")
    policy = ctxwin.Policy({"context_window": 10_000_000}, counter=FakeCounter())
    result = policy.apply(body, format="gemini")
    assert result.request == adapter.render(adapter.parse(body))  # counted, not changed
    return result.tokens


@pytest.mark.parametrize("in_result", [False, True], ids=["content", "function_response"])
def test_an_inline_pdf_counts_by_its_pages(in_result: bool) -> None:
    """A 40-page PDF counted 1,000 tokens; Gemini bills 258 a page, 560 on Gemini 3."""
    base = tokens(in_result=in_result)
    pages40 = inline(pdf(40), "application/pdf")
    assert tokens(pages40, in_result=in_result) - base == 40 * PAGE
    packed = inline(pdf(5, packed=True), "application/pdf")
    assert tokens(packed, in_result=in_result) - base == 5 * PAGE


def test_a_pdf_as_bytes_or_url_safe_base64_counts_by_its_pages() -> None:
    """A ``model_dump()`` holds the bytes; the SDK sends them as URL-safe base64."""
    base = tokens()
    data = pdf(12)
    assert tokens(inline(data, "application/pdf", snake=True)) - base == 12 * PAGE
    url_safe = {"mimeType": "application/pdf", "data": base64.urlsafe_b64encode(data).decode()}
    assert tokens({"inlineData": url_safe}) - base == 12 * PAGE


@pytest.mark.parametrize("in_result", [False, True], ids=["content", "function_response"])
def test_an_image_counts_as_gemini_3_bills_it_by_default(in_result: bool) -> None:
    base = tokens(in_result=in_result)
    assert tokens(inline(png(1920, 1080), "image/png"), in_result=in_result) - base == IMAGE
    by_uri = {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://b/a.jpg"}}
    assert tokens(by_uri, in_result=in_result) - base == IMAGE


@pytest.mark.parametrize(
    "part",
    [
        {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}},
        inline(b"%PDF-1.4\n%%EOF", "application/pdf"),  # no page object
        inline(b"not a pdf at all", "application/pdf"),
        inline(b"\x00" * 64, "audio/wav"),
        {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/a.mp4"}},
        {"inlineData": {"data": "AAAA"}},  # no mime type
    ],
    ids=["pdf-uri", "no-pages", "not-pdf", "audio", "video", "no-mime"],
)
def test_media_ctxwin_cannot_size_keeps_the_flat_estimate(part: dict[str, Any]) -> None:
    assert tokens(part) - tokens() == IMAGE_TOKENS
