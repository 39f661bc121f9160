"""OpenAI's image parts, as the provider bills them: an ``image_url`` that is a string
(Responses ``input_image`` and ``computer_screenshot``) or ``{"url", "detail"}`` (Chat),
``detail`` beside it, counted by :class:`~ctxwin.tokens._images.TileRule` from the size the
image's header says. The meter asks this of a media part (:attr:`Overheads.images`); the
size and the tile rule know nothing of the wire. A body in these shapes bound for Claude
(LiteLLM's, the Agents SDK's on LitellmModel) counts as Claude bills what it receives
(:func:`claude_part_tokens`)."""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin.tokens._documents import PDF_PAGE_TOKENS, pdf_pages
from ctxwin.tokens._images import CLAUDE_IMAGES, OPENAI_IMAGES, AreaRule, TileRule, image_size

__all__ = ["claude_part_tokens", "image_part_tokens"]


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


def claude_part_tokens(raw: object) -> int | None:
    """The tokens of a media part of an OpenAI Chat or Responses body that goes to Claude,
    as Claude bills what it is sent in its place: an inline image by its area
    (:data:`~ctxwin.tokens._images.CLAUDE_IMAGES`; Claude has no ``detail``), an inline PDF
    (a Chat ``file`` part's ``file.file_data``, a Responses ``input_file``'s ``file_data``:
    a ``document`` block) by its pages; None for anything else (its flat estimate)."""
    if not isinstance(raw, Mapping):
        return None
    kind = raw.get("type")
    if kind == "file" or kind == "input_file":
        file = raw.get("file") if kind == "file" else raw
        data = file.get("file_data") if isinstance(file, Mapping) else None
        if not isinstance(data, str) or not data.startswith("data:application/pdf"):
            return None
        pages = pdf_pages(data)
        return None if pages is None else pages * PDF_PAGE_TOKENS
    return image_part_tokens(raw, CLAUDE_IMAGES)
