"""Small PDFs built in memory: pages as plain objects, or packed in a compressed object
stream (PDF 1.5), under a page tree (``/Type /Pages``) that is no page."""

from __future__ import annotations

import base64
import zlib


def pdf(pages: int, *, packed: bool = False, filler: int = 0) -> bytes:
    """A PDF of ``pages`` pages (in an object stream when ``packed``), ``filler`` bytes of
    a content stream after them."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    tree = f"2 0 obj\n<< /Type /Pages /Kids [{kids}] /Count {pages} >>\nendobj\n".encode()
    page = [b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>" for _ in range(pages)]
    if packed:
        inflated = b" ".join(page)
        packed_objects = zlib.compress(inflated)
        objects = (
            (
                f"{3 + pages} 0 obj\n<< /Type /ObjStm /N {pages} /Filter /FlateDecode "
                f"/Length {len(packed_objects)} >>\nstream\n"
            ).encode()
            + packed_objects
            + b"\nendstream\nendobj\n"
        )
    else:
        objects = b"".join(
            f"{3 + i} 0 obj\n".encode() + p + b"\nendobj\n" for i, p in enumerate(page)
        )
    content = (
        b"9 0 obj\n<< /Length %d >>\nstream\n" % filler + b"q" * filler + b"\nendstream\nendobj\n"
    )
    root = b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    return b"%PDF-1.5\n" + root + tree + objects + content + b"trailer << /Root 1 0 R >>\n%%EOF\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
