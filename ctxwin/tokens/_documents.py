"""What an inline PDF costs: its pages, counted by a bounded scan of its objects.

Anthropic bills a PDF page as its text and as an image of the page ("PDF support", *Estimate
your costs*: "Each page typically uses 1,500-3,000 tokens per page depending on content
density", and, each page being converted into an image, "the same image-based cost
calculations are applied"). A page is a ``/Type /Page`` object (the page tree's nodes are
``/Type /Pages``): the scan counts those in the first :data:`PDF_SCAN_BYTES` of the file,
and in the object streams there (PDF 1.5: compressed objects, inflated up to as many
bytes). A file longer than that counts its pages in proportion to its length. Anything else
(not base64, not a PDF, no page found) has no count here, and the meter counts it as its
flat estimate (:data:`~ctxwin.tokens._meter.IMAGE_TOKENS`).
"""

from __future__ import annotations

import math
import re
import zlib

from ctxwin.tokens._images import inline_data

__all__ = ["PDF_PAGE_TOKENS", "PDF_SCAN_BYTES", "pdf_pages"]

PDF_PAGE_TOKENS = 3000
"""A page: the top of Anthropic's documented 1,500-3,000 tokens a page, which is above every
page measured with count_tokens, its image included (a page of text or a table 2,100 to
2,500 on Claude 4.5 and 5.5 models, a scanned page 1,600). The sum of the documented text
and a page image's most (4,600) counted a 60-page PDF that fits a 200k window as over it."""
PDF_SCAN_BYTES = 8 << 20
"""The bytes of a PDF scanned for its pages (decoded from base64 and searched at about 4 ms
a MiB: 30 ms at most, once a document, the meter memoizing blocks), and the most its object
streams inflate to."""

_DELIMITER = rb"(?=[\s/<>\[\]()%{}]|$)"
_PAGE = re.compile(rb"/Type\s*/Page" + _DELIMITER)
"""A page object's type (``/Pages``, the page tree's, is not: a name ends at a delimiter)."""
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm" + _DELIMITER)
_STREAM = re.compile(rb"stream\r?\n")


def pdf_pages(source: str) -> int | None:
    """The pages of an inline PDF (base64, or a ``data:`` URL of it); None when the data is
    no base64, no PDF, or holds no page object the scan finds: never an exception."""
    b64 = inline_data(source)
    if b64 is None:
        return None
    try:
        data = b64.read(0, PDF_SCAN_BYTES)
    except ValueError:
        return None
    if not data.startswith(b"%PDF-"):
        return None
    pages = len(_PAGE.findall(data)) + _compressed_pages(data)
    if pages == 0:
        return None
    total = len(b64.text) - b64.offset  # base64 characters: 4 for 3 bytes
    scanned = math.ceil(len(data) * 4 / 3)
    return math.ceil(pages * total / scanned) if total > scanned + 4 else pages


def _compressed_pages(data: bytes) -> int:
    """The page objects in the object streams of ``data`` (FlateDecode, the one filter
    writers use for them), inflated up to :data:`PDF_SCAN_BYTES` in all."""
    budget = PDF_SCAN_BYTES
    pages = 0
    view = memoryview(data)  # the streams' slices, not copies of them
    for found in _OBJECT_STREAM.finditer(data):
        start = _STREAM.search(data, found.end())
        if start is None or budget <= 0:
            break
        end = data.find(b"endstream", start.end())
        end = end if end >= 0 else len(data)
        try:
            objects = zlib.decompressobj().decompress(view[start.end() : end], budget)
        except zlib.error:
            continue
        budget -= len(objects)
        pages += len(_PAGE.findall(objects))
    return pages
