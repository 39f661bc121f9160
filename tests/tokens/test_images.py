"""An inline image's size read from its header, and its tokens as OpenAI's tile rule counts
them; anything without a readable size keeps the flat estimate."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

import ctxwin
from ctxwin.formats._openai_images import image_part_tokens
from ctxwin.testing import FakeCounter
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES, TileRule, image_size
from ctxwin.tokens._meter import IMAGE_TOKENS
from tests.tokens.images import (
    app_segment,
    data_url,
    gif,
    jpeg,
    png,
    webp_extended,
    webp_lossless,
    webp_lossy,
)

SIZES = [(1, 1), (3, 7), (1280, 800), (4096, 2160)]

# ------------------------------------------------------------------------------ sizes


@pytest.mark.parametrize("build", [png, gif, jpeg], ids=["png", "gif", "jpeg"])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_size_of_an_image_is_read_from_its_header(
    build: Callable[[int, int], bytes], width: int, height: int
) -> None:
    assert image_size(data_url(build(width, height))) == (width, height)


@pytest.mark.parametrize(
    "build", [webp_lossy, webp_lossless, webp_extended], ids=["vp8", "vp8l", "vp8x"]
)
@pytest.mark.parametrize(("width", "height"), [(1, 1), (640, 480), (16383, 3)])
def test_the_size_of_a_webp_is_read_from_each_of_its_headers(
    build: Callable[[int, int], bytes], width: int, height: int
) -> None:
    assert image_size(data_url(build(width, height), "image/webp")) == (width, height)


def test_base64_alone_is_read_as_a_data_urls_data() -> None:
    """Anthropic's ``source.data`` and Gemini's ``inline_data.data`` carry no ``data:``."""
    assert image_size(base64.b64encode(png(33, 44)).decode()) == (33, 44)


def test_a_jpegs_size_is_found_past_its_metadata() -> None:
    exif_and_icc = app_segment(60_000) + app_segment(60_000, marker=0xE2)
    assert image_size(data_url(jpeg(1920, 1080, exif_and_icc), "image/jpeg")) == (1920, 1080)


def test_only_the_header_is_decoded() -> None:
    """The image data after the header (a JPEG's metadata before its frame header) is
    stepped over, not decoded: characters that are no base64 there do not matter."""
    url = data_url(png(800, 600))
    head = len("data:image/png;base64,") + 40  # 30 bytes: the longest header (a WebP's)
    assert image_size(url[:head] + "!" * (len(url) - head)) == (800, 600)
    meta = jpeg(640, 480, app_segment(30_000))
    encoded = data_url(meta, "image/jpeg")
    start = len("data:image/jpeg;base64,") + 4 * (30 // 3)  # inside the EXIF segment
    broken = encoded[:start] + "!" * 30_000 + encoded[start + 30_000 :]
    assert image_size(broken) == (640, 480)


@pytest.mark.parametrize(
    "source",
    [
        "data:image/png;base64,",
        "data:image/png;base64,!!!!not base64!!!!",
        "data:image/png;base64,iVBORw0KGgo" * 3,  # a PNG signature, then no header
        "data:image/png;base64,iVBORw0K",  # cut short
        "data:image/png;base64,ébène",  # not ASCII
        "data:image/png,%89PNG",  # a data URL that is not base64
        "data:image/svg+xml;base64," + base64.b64encode(b"<svg width='9'/>").decode(),
        "https://example.com/shot.png",
        "",
        data_url(b"\xff\xd8\xff" + b"\xff\xda\x00\x02", "image/jpeg"),  # a scan, no frame
        data_url(b"\xff\xd8\xff\xe1\x00\x00" * 200, "image/jpeg"),  # segments that never end
        data_url(png(0, 5)),  # no pixels
    ],
)
def test_what_has_no_readable_size_has_none(source: str) -> None:
    assert image_size(source) is None


# ------------------------------------------------------------------------------ tokens


@pytest.mark.parametrize(
    ("width", "height", "detail", "tokens"),
    [
        (1024, 1024, "high", 765),  # OpenAI's examples: scaled to 768 x 768, 4 tiles
        (2048, 4096, "high", 1105),  # to 1024 x 2048, then 768 x 1536: 6 tiles
        (4096, 8192, "low", 85),  # low: the base alone, whatever the size
        (1920, 1080, "auto", 1105),  # auto counts as high: the most it can cost
        (1, 1, None, 255),  # small images are not scaled up: one tile
        (512, 512, "high", 255),
        (513, 512, "high", 425),
    ],
)
def test_the_tile_rule_counts_as_openai_documents(
    width: int, height: int, detail: str | None, tokens: int
) -> None:
    assert OPENAI_IMAGES.tokens(width, height, detail) == tokens


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1000, 1000, 1334),  # Anthropic's examples: w * h / 750
        (1092, 1092, 1590),
        (200, 200, 64),  # 54 by area, but 8 x 8 squares of 28 px
        (1920, 1080, 2765),  # within 2,576 px: not scaled
        (4000, 4000, 4784),  # scaled to 2,576 px a side, then to the most an image costs
        (5152, 100, 184),  # scaled to 2,576 x 50: 92 x 2 squares, 172 by area
        (1, 1, 1),
    ],
)
def test_the_area_rule_counts_as_anthropic_documents(width: int, height: int, tokens: int) -> None:
    assert CLAUDE_IMAGES.tokens(width, height) == tokens


def test_a_rule_reads_the_image_parts_of_both_openai_apis() -> None:
    url = data_url(png(1024, 1024))
    assert image_part_tokens({"type": "input_image", "image_url": url}) == 765
    low = {"type": "input_image", "image_url": url, "detail": "low"}
    assert image_part_tokens(low) == 85
    chat = {"type": "image_url", "image_url": {"url": url, "detail": "low"}}
    assert image_part_tokens(chat) == 85
    assert image_part_tokens({"image_url": url}, TileRule(base=65, tile=129)) == 65 + 4 * 129


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_image", "image_url": "https://example.com/a.png"},
        {"type": "input_image", "file_id": "file-1"},
        {"type": "input_image", "image_url": "data:image/png;base64,%%%"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0x"},
        {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
        "not a part",
    ],
)
def test_a_part_without_a_readable_inline_image_has_no_rule_count(part: object) -> None:
    assert image_part_tokens(part) is None


# ------------------------------------------------------------------------------ in a request


def _tokens(*parts: dict[str, Any]) -> int:
    """The tokens of a Responses request: a user message holding a text and ``parts``."""
    content = [{"type": "input_text", "text": "what is this?"}, *parts]
    body = {"model": "gpt-4o", "input": [{"role": "user", "content": content}]}
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
    return policy.apply(body, format="openai-responses").tokens


def test_an_inline_responses_image_counts_by_its_size() -> None:
    shot = {"type": "input_image", "image_url": data_url(png(1280, 800)), "detail": "auto"}
    assert _tokens(shot) - _tokens() == 1105
    assert _tokens({**shot, "detail": "low"}) - _tokens() == 85


def test_an_image_ctxwin_cannot_size_keeps_the_flat_estimate() -> None:
    """A URL the provider fetches (its size is not in the request), malformed data."""
    url = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}
    bad = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo" * 9}
    assert _tokens(url) - _tokens() == IMAGE_TOKENS
    assert _tokens(bad) - _tokens() == IMAGE_TOKENS


def test_an_inline_chat_image_counts_by_its_size() -> None:
    """It counted the flat estimate, though the Chat part is one the rule reads."""
    url = data_url(png(768, 2048))

    def tokens(*parts: dict[str, Any]) -> int:
        content = [{"type": "text", "text": "what is this?"}, *parts]
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}]}
        policy = ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
        return policy.apply(body, format="openai-chat").tokens

    high = {"type": "image_url", "image_url": {"url": url, "detail": "high"}}
    assert tokens(high) - tokens() == 85 + 8 * 170  # 768 x 2048: 2 x 4 tiles
    assert (
        tokens({"type": "image_url", "image_url": {"url": url, "detail": "low"}}) - tokens() == 85
    )
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    assert tokens(remote) - tokens() == IMAGE_TOKENS
