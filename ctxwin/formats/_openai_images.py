"""OpenAI's media parts, as the provider bills them: an image part whose ``image_url`` is a
string (Responses ``input_image`` and ``computer_screenshot``) or ``{"url", "detail"}``
(Chat), ``detail`` beside it, counted by :class:`~ctxwin.tokens._images.TileRule` from the
size the image's header says; an inline PDF (a Chat ``file`` part's ``file.file_data``, a
Responses ``input_file``'s ``file_data``) by its pages (:func:`openai_part_tokens`). The
meter asks this of a media part (:attr:`Overheads.images`); the size, the pages and the tile
rule know nothing of the wire. A body in these shapes bound for Claude (LiteLLM's, the
Agents SDK's on LitellmModel) counts as Claude bills what it receives
(:func:`claude_part_tokens`)."""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin.tokens._documents import PDF_PAGE_TOKENS, pdf_pages
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES, AreaRule, TileRule, image_size

__all__ = [
    "OPENAI_PDF_PAGE_TOKENS",
    "PDF_PAGE_IMAGE",
    "PDF_TEXT_TOKENS",
    "claude_part_tokens",
    "image_part_tokens",
    "openai_part_tokens",
    "pdf_part_data",
]

PDF_PAGE_IMAGE = (1240, 1754)
"""The image of a PDF page OpenAI reads (its *File inputs* guide: "we put into the model's
context both the extracted text and an image of each page"; the resolution is not
documented): an A4 page at 150 dpi. At high detail its shortest side goes to 768 px, 2 x 3
tiles (1,105 tokens by :data:`~ctxwin.tokens._images.OPENAI_IMAGES`); a US Letter page
spans 2 x 2 (765), so this is the larger of the two common sizes."""
PDF_TEXT_TOKENS = 1000
"""The extracted text of a PDF page: a page of text or a table measured with Claude's
count_tokens held 500 to 900 tokens beside its page image (2,100 to 2,500 in all, a scan
without text 1,600: :data:`~ctxwin.tokens._documents.PDF_PAGE_TOKENS`), rounded up; a page
of 500 words is about 700 o200k tokens."""
OPENAI_PDF_PAGE_TOKENS = OPENAI_IMAGES.tokens(*PDF_PAGE_IMAGE, "high") + PDF_TEXT_TOKENS
"""A PDF page sent to OpenAI, 2,105 tokens: its image at high detail (what ``auto`` reads
on GPT-5.6 and later; earlier models read ``auto`` as ``low``, 85 tokens, so there this is
an upper bound) and its text. A Responses ``input_file`` that says ``detail: "low"`` counts
its page images at 85 (:func:`openai_part_tokens`); a Chat ``file`` part has no detail."""


def image_part_tokens(raw: object, rule: TileRule | AreaRule = OPENAI_IMAGES) -> int | None:
    """The tokens of an image part whose data is inline and whose size its header says;
    None for anything else (a URL, a file id, audio, a file), which the meter counts as its
    flat estimate."""
    if not isinstance(raw, Mapping):
        return None
    source = raw.get("image_url")
    detail = raw.get("detail")
    if isinstance(source, Mapping):
        detail = source.get("detail", detail)
        source = source.get("url")
    if not isinstance(source, str) or not source.startswith("data:"):
        return None
    size = image_size(source)
    return None if size is None else rule.tokens(size[0], size[1], detail)


def pdf_part_data(raw: Mapping[object, object]) -> str | None:
    """The inline PDF of a Chat ``file`` part (``file.file_data``) or a Responses
    ``input_file`` (``file_data``): a ``data:application/pdf`` URL, or the base64 alone
    beside a ``.pdf`` filename (as the API takes it); None for anything else (a file id, a
    URL, another type of file)."""
    kind = raw.get("type")
    file = raw.get("file") if kind == "file" else raw if kind == "input_file" else None
    if not isinstance(file, Mapping):
        return None
    data = file.get("file_data")
    if not isinstance(data, str):
        return None
    if data.startswith("data:"):
        return data if data.startswith("data:application/pdf") else None
    name = file.get("filename")
    return data if isinstance(name, str) and name.lower().endswith(".pdf") else None


def openai_part_tokens(raw: object) -> int | None:
    """The tokens of a media part sent to OpenAI: an inline PDF by its pages
    (:data:`OPENAI_PDF_PAGE_TOKENS` each, its page images at 85 where an ``input_file``
    says ``detail: "low"``), an inline image by its tiles (:func:`image_part_tokens`); None
    for anything else, and for a PDF whose pages the scan does not find (its flat
    estimate)."""
    if not isinstance(raw, Mapping):
        return None
    data = pdf_part_data(raw)
    if data is None:
        return image_part_tokens(raw)
    pages = pdf_pages(data)
    if pages is None:
        return None
    image = OPENAI_IMAGES.tokens(*PDF_PAGE_IMAGE, raw.get("detail", "high"))
    return pages * (image + PDF_TEXT_TOKENS)


def claude_part_tokens(raw: object) -> int | None:
    """The tokens of a media part of an OpenAI Chat or Responses body that goes to Claude,
    as Claude bills what it is sent in its place: an inline image by its area
    (:data:`~ctxwin.tokens._images.CLAUDE_IMAGES`; Claude has no ``detail``), an inline PDF
    (:func:`pdf_part_data`: a ``document`` block) by its pages; None for anything else (its
    flat estimate)."""
    if not isinstance(raw, Mapping):
        return None
    if raw.get("type") in ("file", "input_file"):
        data = pdf_part_data(raw)
        pages = None if data is None else pdf_pages(data)
        return None if pages is None else pages * PDF_PAGE_TOKENS
    return image_part_tokens(raw, CLAUDE_IMAGES)
