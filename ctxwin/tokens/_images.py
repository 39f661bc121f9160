"""What an inline image costs, read from its header: no image is decoded.

A PNG, GIF, WebP or JPEG says its width and height in its first bytes (a JPEG in its frame
header, after any metadata segments, which are stepped over by their lengths). Those bytes
are decoded from the base64 of a data URL (``data:image/png;base64,...``) where they lie,
four characters for three bytes, so reading the size of a screenshot of 2 MB decodes a few
dozen bytes. Anything else (a URL the provider fetches, a file id, base64 that is not
base64, a format not listed, a header cut short) has no size here, and the meter counts it
as its flat estimate (:data:`~ctxwin.tokens._meter.IMAGE_TOKENS`).

:class:`TileRule` turns a size into tokens as OpenAI documents it for its tile-based models
("Images and vision", *Calculating costs*): ``detail: "low"`` costs the base tokens; any
other detail scales the image to fit in 2048 x 2048, then its shortest side down to 768,
and adds the tile tokens for each 512 px square it spans. :data:`OPENAI_IMAGES` is the
gpt-4o / gpt-4.1 rule (85 base, 170 a tile): a 1024 x 1024 image at ``high`` is 765 tokens.
:class:`AreaRule` does the same for Anthropic, which bills an image by its area
(:data:`CLAUDE_IMAGES`).
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass

__all__ = [
    "CLAUDE_IMAGES",
    "OPENAI_IMAGES",
    "AreaRule",
    "Base64Bytes",
    "TileRule",
    "image_size",
    "inline_data",
]

_JPEG_SEGMENTS = 64
"""The most segments read before a JPEG's frame header (metadata, ICC profile chunks...)."""
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
"""JPEG start-of-frame markers (the frame header holds the size); C4, C8, CC are not."""
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
"""JPEG markers without a length (TEM, RST0-7)."""


class Base64Bytes:
    """Random access to the bytes a base64 string encodes, decoding only what is read."""

    __slots__ = ("offset", "text")

    def __init__(self, text: str, offset: int = 0) -> None:
        self.text = text
        self.offset = offset  # where the base64 starts in ``text`` (not copied out of it)

    def read(self, start: int, n: int) -> bytes:
        """The ``n`` bytes from byte ``start`` (fewer at the end; ValueError: not base64)."""
        first = start // 3
        last = (start + n + 2) // 3  # the groups of 3 bytes (4 characters) they lie in
        at = self.offset
        chunk = self.text[at + first * 4 : at + last * 4]
        data = base64.b64decode(chunk, validate=True)  # binascii.Error is a ValueError
        skip = start - first * 3
        return data[skip : skip + n]


def inline_data(source: str) -> Base64Bytes | None:
    """The bytes of a ``data:`` URL's base64, or of base64 alone (None: a ``data:`` URL
    that is not base64, or nothing)."""
    start = 0
    if source.startswith("data:"):
        comma = source.find(",", 5, 300)
        if comma < 0 or not source[5:comma].lower().endswith(";base64"):
            return None
        start = comma + 1
    return Base64Bytes(source, start) if len(source) > start else None


def image_size(source: str) -> tuple[int, int] | None:
    """The width and height of an inline image: a ``data:`` URL with base64 data, or the
    base64 alone. None when it is not one of PNG, GIF, WebP or JPEG, or its header does
    not say (cut short, malformed): never an exception."""
    b64 = inline_data(source)
    if b64 is None:
        return None
    try:
        head = b64.read(0, 30)
        size = _header_size(head)
        if size is None and head[:3] == b"\xff\xd8\xff":
            size = _jpeg_size(b64)
    except (ValueError, struct.error):
        return None
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def _header_size(head: bytes) -> tuple[int, int] | None:
    """The size a PNG, GIF or WebP header states in its first 30 bytes."""
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        w, h = struct.unpack(">II", head[16:24])
        return w, h
    if head[:6] in (b"GIF87a", b"GIF89a"):
        w, h = struct.unpack("<HH", head[6:10])
        return w, h
    if head[:4] != b"RIFF" or head[8:12] != b"WEBP":
        return None
    chunk = head[12:16]
    if chunk == b"VP8X":  # extended: the canvas size, 24 bits each, minus one
        w = int.from_bytes(head[24:27], "little") + 1
        h = int.from_bytes(head[27:30], "little") + 1
        return w, h
    if chunk == b"VP8L" and head[20:21] == b"\x2f":  # lossless: 14 bits each, minus one
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":  # lossy: 14 bits each
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


def _jpeg_size(b64: Base64Bytes) -> tuple[int, int] | None:
    """The size in a JPEG's frame header, found by stepping over the segments before it."""
    at = 2
    for _ in range(_JPEG_SEGMENTS):
        marker = b64.read(at, 4)
        if len(marker) < 4 or marker[0] != 0xFF:
            return None
        kind = marker[1]
        if kind == 0xFF:  # a fill byte before the marker
            at += 1
            continue
        if kind in _STANDALONE:
            at += 2
            continue
        if kind in _SOF:
            frame = b64.read(at + 5, 4)  # after the length and the sample precision
            if len(frame) < 4:
                return None
            h, w = struct.unpack(">HH", frame)
            return w, h
        if kind in (0xD9, 0xDA):  # the end, or the scan: no frame header before it
            return None
        at += 2 + struct.unpack(">H", marker[2:4])[0]
    return None


@dataclass(frozen=True, slots=True)
class TileRule:
    """Image tokens as OpenAI's tile-based models bill them (see the module docstring):
    ``base`` for every image, plus ``tile`` per 512 px square unless the detail is
    ``low`` (the parts that carry it are read in :mod:`ctxwin.formats._openai_images`)."""

    base: int = 85
    tile: int = 170
    fit: int = 2048
    short: int = 768
    square: int = 512

    def tokens(self, width: int, height: int, detail: object = "auto") -> int:
        """The tokens of an image of this size (``detail`` "low": the base alone; any
        other, "auto" and "original" too, counts its tiles: the most it can cost)."""
        if detail == "low":
            return self.base
        w, h = float(width), float(height)
        if max(w, h) > self.fit:
            scale = self.fit / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > self.short:
            scale = self.short / min(w, h)
            w, h = w * scale, h * scale
        tiles = math.ceil(w / self.square - 1e-9) * math.ceil(h / self.square - 1e-9)
        return self.base + self.tile * max(tiles, 1)


OPENAI_IMAGES = TileRule()
"""GPT-4o and GPT-4.1 (85 base tokens, 170 a tile): an estimate for OpenAI's other
models too (gpt-5: 70 and 140, o1 and o3: 75 and 150, computer-use-preview: 65 and 129;
the patch-based ``-mini`` and ``-nano`` models bill otherwise)."""


CLAUDE_PIXELS_PER_TOKEN = 750
"""Anthropic: "tokens = (width px * height px) / 750" ("Images and vision", *Evaluate image
size*), for an image within the model's size limits."""
CLAUDE_PATCH = 28
"""The side of the pixel squares Claude counts one token each, as measured with its
count_tokens (not documented: a 1000 x 1000 image is 36 x 36 = 1,296 tokens, a 256 x 256 one
10 x 10 = 100, not 87): the 750 pixels a token of the documented rule average them, and an
image off their grid costs its partial squares, more than its area says."""
CLAUDE_MAX_EDGE = 2576
"""The longest edge, in pixels, any Claude model reads an image at: Opus 4.7 and later
(high resolution, "up to 2576 pixels on the long edge"); earlier models scale a longer image
down to 1,568 px ("If your image's long edge is more than 1568 pixels, or your image is more
than ~1,600 tokens, it will first be scaled down, preserving aspect ratio")."""
CLAUDE_MAX_TOKENS = 4784
"""The most one image costs on any Claude model (high resolution: about 4,784 tokens,
3.75 megapixels; earlier models: about 1,600); a larger one is scaled down to fit."""


@dataclass(frozen=True, slots=True)
class AreaRule:
    """Image tokens as Anthropic bills them (see the constants it defaults to): an image
    longer than ``max_edge`` is scaled down (aspect kept) to fit; it then costs its area
    over ``per_token``, or its ``patch`` squares where that is more, at most ``max_tokens``
    (an image over them is scaled down until it fits). The limits are those of the models
    that read images largest, whatever the model: on an earlier model a large image counts
    up to three times what it is billed (4,784 tokens against about 1,600), never less."""

    per_token: int = CLAUDE_PIXELS_PER_TOKEN
    patch: int = CLAUDE_PATCH
    max_edge: int = CLAUDE_MAX_EDGE
    max_tokens: int = CLAUDE_MAX_TOKENS

    def tokens(self, width: int, height: int, detail: object = None) -> int:
        """The tokens of an image of this size (``detail``: not Anthropic's, unused)."""
        w, h = float(width), float(height)
        if max(w, h) > self.max_edge:
            scale = self.max_edge / max(w, h)
            w, h = w * scale, h * scale
        area = math.ceil(w * h / self.per_token - 1e-9)
        patches = math.ceil(w / self.patch - 1e-9) * math.ceil(h / self.patch - 1e-9)
        return max(1, min(max(area, patches), self.max_tokens))


CLAUDE_IMAGES = AreaRule()
"""Claude's image rule, with the limits of the models that read images largest."""
