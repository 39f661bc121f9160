"""OpenAI's image parts, as the provider bills them: an ``image_url`` that is a string
(Responses ``input_image`` and ``computer_screenshot``) or ``{"url", "detail"}`` (Chat),
``detail`` beside it, counted by :class:`~ctxwin.tokens._images.TileRule` from the size the
image's header says. The meter asks this of a media part (:attr:`Overheads.images`); the
size and the tile rule know nothing of the wire."""

from __future__ import annotations

from collections.abc import Mapping

from ctxwin.tokens._images import OPENAI_IMAGES, TileRule, image_size

__all__ = ["image_part_tokens"]


def image_part_tokens(raw: object, rule: TileRule = OPENAI_IMAGES) -> int | None:
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
