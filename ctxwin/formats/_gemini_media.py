"""Gemini's media parts, as the provider bills them by default: an inline PDF
(``inlineData`` of ``application/pdf``) by its pages (the page scan of
:mod:`ctxwin.tokens._documents`), :data:`PDF_PAGE_TOKENS` each, and an image, inline or by
URI, at :data:`IMAGE_TOKENS` whatever its size, in a content's parts or a function
response's ``parts``.

The figures are Gemini 3's defaults, the most it bills (the Gemini API's *Media resolution*
page, "Token counts": ``media_resolution`` sets "the maximum number of tokens allocated for
media inputs"; left unset, an image is read at ``MEDIA_RESOLUTION_HIGH``, 1,120 tokens, and
a PDF page at ``MEDIA_RESOLUTION_MEDIUM``, 560). Gemini 2.x bills less (258 tokens a PDF
page, *Document understanding*; 258 an image tile): a count here errs high, as the window
and budget want. A PDF by URI (its pages are not in the request), one whose pages the scan
does not find, audio and video (billed by their length, which is not read here) have no
count here: the meter counts them as its flat estimate. A part's own
``mediaResolution`` is not read."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from ctxwin.tokens._documents import pdf_pages
from ctxwin.tokens._meter import Overheads

__all__ = ["IMAGE_TOKENS", "OVERHEADS", "PDF_PAGE_TOKENS", "media_part_tokens"]

PDF_PAGE_TOKENS = 560
"""A PDF page: Gemini 3's default (``MEDIA_RESOLUTION_MEDIUM``), above Gemini 2.x's 258."""
IMAGE_TOKENS = 1120
"""An image: Gemini 3's default (``MEDIA_RESOLUTION_HIGH``), whatever its size."""
_INLINE = ("inlineData", "inline_data")
_BLOBS = (*_INLINE, "fileData", "file_data")
_URL_SAFE = str.maketrans("-_", "+/")


def _base64(data: object) -> str | None:
    """The data as standard base64: bytes (a python ``model_dump()``) encoded, URL-safe
    text (what the SDK sends) translated; None for anything else."""
    if isinstance(data, (bytes, bytearray)):
        return base64.b64encode(data).decode("ascii")
    if not isinstance(data, str):
        return None
    return data.translate(_URL_SAFE) if "-" in data or "_" in data else data


def media_part_tokens(raw: object) -> int | None:
    """The tokens of a Gemini media part (``inlineData`` or ``fileData``, either spelling);
    None for one this cannot tell (its flat estimate)."""
    if not isinstance(raw, Mapping):
        return None
    key = next((k for k in _BLOBS if isinstance(raw.get(k), Mapping)), None)
    if key is None:
        return None
    blob = raw[key]
    mime = blob.get("mimeType")
    if mime is None:
        mime = blob.get("mime_type")
    if not isinstance(mime, str):
        return None
    mime = mime.lower()
    if mime.startswith("image/"):
        return IMAGE_TOKENS
    if mime == "application/pdf" and key in _INLINE:
        data = _base64(blob.get("data"))
        pages = None if data is None else pdf_pages(data)
        return None if pages is None else pages * PDF_PAGE_TOKENS
    return None


OVERHEADS = Overheads(nulls_unset=True, images=media_part_tokens)
"""The Gemini adapter's: a ``model_dump()``'s nulls are unset (not billed), its PDFs and
images as :func:`media_part_tokens` counts them."""
