"""Anthropic's media blocks, as the provider bills them: an ``image`` whose ``source`` is
base64 by the size its header says (:class:`~ctxwin.tokens._images.AreaRule`), a
``document`` whose source is a base64 PDF by its pages
(:data:`~ctxwin.tokens._documents.PDF_PAGE_TOKENS` each), in a message or in a
``tool_result``'s content. A URL or a file id (the size is not in the request), or data
whose size or pages cannot be read, has no count here: the meter counts it as its flat
estimate. The size, the pages and the rules know nothing of the wire."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ctxwin.tokens._documents import PDF_PAGE_TOKENS, pdf_pages
from ctxwin.tokens._images import CLAUDE_IMAGES, image_size
from ctxwin.tokens._meter import Overheads

__all__ = ["OVERHEADS", "SizeRule", "media_part_tokens"]


class SizeRule(Protocol):
    """What an image of a size costs (:class:`~ctxwin.tokens._images.AreaRule`, Claude's;
    :class:`~ctxwin.tokens._images.TileRule`, OpenAI's, for a body in Anthropic's shape that
    an OpenAI model is sent)."""

    def tokens(self, width: int, height: int, detail: object = ...) -> int: ...


def media_part_tokens(
    raw: object, rule: SizeRule = CLAUDE_IMAGES, page_tokens: int = PDF_PAGE_TOKENS
) -> int | None:
    """The tokens of an inline image or PDF block, an image by ``rule`` and a PDF at
    ``page_tokens`` a page (Claude's by default; for a block an OpenAI model is sent,
    OpenAI's tiles and :data:`~ctxwin.formats._openai_images.OPENAI_PDF_PAGE_TOKENS`);
    None for anything else (a URL, a file id, a size or page count the data does not give),
    which the meter counts as its flat estimate."""
    if not isinstance(raw, Mapping):
        return None
    source = raw.get("source")
    if not isinstance(source, Mapping) or source.get("type") != "base64":
        return None
    data = source.get("data")
    if not isinstance(data, str):
        return None
    kind = raw.get("type")
    if kind == "image":
        size = image_size(data)
        return None if size is None else rule.tokens(size[0], size[1])
    if kind == "document" and source.get("media_type") == "application/pdf":
        pages = pdf_pages(data)
        return None if pages is None else pages * page_tokens
    return None


OVERHEADS = Overheads(images=media_part_tokens)
"""The Anthropic adapter's: the per-message and per-request defaults, its inline images and
PDFs by their size and pages (:func:`media_part_tokens`)."""
