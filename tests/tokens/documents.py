"""Small PDFs built in memory: pages as plain objects, or packed in a compressed object
stream (PDF 1.5), under a page tree (``/Type /Pages``) that is no page."""

from __future__ import annotations

import base64
import zlib

PAGE = b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>"


def pdf(
    pages: int,
    *,
    packed: bool = False,
    filler: int = 0,
    tree: bool = True,
    pages_last: bool = False,
    updated: bool = False,
) -> bytes:
    """A PDF of ``pages`` pages (in an object stream when ``packed``) under a page tree
    (none without ``tree``), ``filler`` bytes of a content stream after them (before them
    when ``pages_last``), and, when ``updated``, an incremental update that writes each
    page object again under its number (an annotation added)."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    tree_object = f"2 0 obj\n<< /Type /Pages /Kids [{kids}] /Count {pages} >>\nendobj\n"
    objects = _packed(pages) if packed else _plain(pages, PAGE)
    content = (
        b"9 0 obj\n<< /Length %d >>\nstream\n" % filler + b"q" * filler + b"\nendstream\nendobj\n"
    )
    root = b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    body = (tree_object.encode() if tree else b"") + objects
    body = content + body if pages_last else body + content
    update = b""
    if updated:
        update = _plain(pages, PAGE[:-2] + b"/Annots[8 0 R]>>") + b"trailer << /Prev 0 >>\n"
    return b"%PDF-1.5\n" + root + body + b"trailer << /Root 1 0 R >>\n%%EOF\n" + update


def _plain(pages: int, page: bytes) -> bytes:
    return b"".join(f"{3 + i} 0 obj\n".encode() + page + b"\nendobj\n" for i in range(pages))


def _packed(pages: int) -> bytes:
    """An object stream of the pages: its header pairs each number with its offset."""
    offsets = [i * (len(PAGE) + 1) for i in range(pages)]
    header = " ".join(f"{3 + i} {at}" for i, at in enumerate(offsets)).encode() + b"\n"
    packed = zlib.compress(header + b" ".join([PAGE] * pages))
    return (
        (
            f"{3 + pages} 0 obj\n<< /Type /ObjStm /N {pages} /First {len(header)} "
            f"/Filter /FlateDecode /Length {len(packed)} >>\nstream\n"
        ).encode()
        + packed
        + b"\nendstream\nendobj\n"
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
