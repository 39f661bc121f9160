"""Small images built in memory (struct and zlib, no files): a PNG, a GIF and a baseline
JPEG of any size, each a complete image a decoder reads, and WebP headers; as bytes or as a
``data:`` URL."""

from __future__ import annotations

import base64
import math
import struct
import zlib


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def png(width: int, height: int) -> bytes:
    """A black 8-bit greyscale PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    rows = (b"\x00" + bytes(width)) * height  # each row: filter 0, then its pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def gif(width: int, height: int) -> bytes:
    """A GIF89a of colour 0, its LZW data a clear code before every pixel (no table grows,
    so every code is 3 bits: four pixels, clear and 0 each, are the three bytes 04 41 10)."""
    pixels = width * height
    rest = [4, 0] * (pixels % 4) + [5]  # clear, pixel ... end (minimum code size 2)
    tail = sum(c << (3 * i) for i, c in enumerate(rest))
    data = b"\x04\x41\x10" * (pixels // 4) + tail.to_bytes(-(-3 * len(rest) // 8), "little")
    blocks = b"".join(
        bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)
    )
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0)  # a global table of 2 colours
    image = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return b"GIF89a" + screen + b"\x00\x00\x00\xff\xff\xff" + image + b"\x02" + blocks + b"\x00;"


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def app_segment(n: int, marker: int = 0xE1) -> bytes:
    """A JPEG application segment (EXIF, ICC profile...) of ``n`` bytes of data."""
    return _segment(marker, b"Exif\x00\x00" + bytes(n))


def jpeg(width: int, height: int, metadata: bytes = b"") -> bytes:
    """A black baseline greyscale JPEG: one Huffman code for a DC difference of 0 and one
    for the end of block, so each 8x8 block is two bits; ``metadata`` segments before its
    frame header."""
    tables = bytes([1] + [0] * 15) + b"\x00"  # one code of length 1, for symbol 0
    blocks = math.ceil(width / 8) * math.ceil(height / 8)
    n = 2 * blocks
    scan = ((1 << (-n % 8)) - 1).to_bytes(1, "big") if n % 8 else b""  # padded with ones
    scan = (0).to_bytes(n // 8, "big") + scan
    return (
        b"\xff\xd8"
        + _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + metadata
        + _segment(0xDB, b"\x00" + bytes([1] * 64))
        + _segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
        + _segment(0xC4, b"\x00" + tables)
        + _segment(0xC4, b"\x10" + tables)
        + _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + scan
        + b"\xff\xd9"
    )


def _riff(chunk: bytes, body: bytes) -> bytes:
    inner = b"WEBP" + chunk + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(inner)) + inner


def webp_lossy(width: int, height: int) -> bytes:
    """The header of a lossy WebP (``VP8 ``): a key frame's tag, start code and size."""
    frame = b"\x30\x01\x00\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return _riff(b"VP8 ", frame + bytes(8))


def webp_lossless(width: int, height: int) -> bytes:
    """The header of a lossless WebP (``VP8L``): its signature, then 14 bits of width - 1
    and 14 of height - 1."""
    bits = (width - 1) | ((height - 1) << 14)
    return _riff(b"VP8L", b"\x2f" + struct.pack("<I", bits) + bytes(4))


def webp_extended(width: int, height: int) -> bytes:
    """The header of an extended WebP (``VP8X``): the canvas, 24 bits each, minus one."""
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return _riff(b"VP8X", b"\x10\x00\x00\x00" + size)
