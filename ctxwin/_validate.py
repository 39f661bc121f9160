"""The request-level API of the foundation: parse, render, check, repair."""

from __future__ import annotations

from typing import NamedTuple

from ctxwin._core.check import NOTHING_TO_SEND, nothing_left, problems_of
from ctxwin._core.conversation import Conversation
from ctxwin._core.records import Fix, Problem
from ctxwin._core.repair import repair_conversation
from ctxwin._exceptions import InputError, PairingError
from ctxwin.formats import Adapter, detect, get_adapter

__all__ = ["FormatLike", "Repaired", "check", "parse", "render", "repair"]

FormatLike = str | Adapter
"""A format name (``openai-chat``, ``anthropic``, ``openai-responses``, ``gemini``) or an
adapter instance."""


def _adapter(body: object, format: FormatLike | None) -> Adapter:
    return get_adapter(format if format is not None else detect(body))


def parse(body: object, format: FormatLike | None = None) -> Conversation:
    """A request body (or a bare list of messages/items) as a neutral conversation.

    ``format`` overrides detection (a format name or an adapter). Raises
    :class:`~ctxwin.FormatError` with the path of what is malformed.
    """
    return _adapter(body, format).parse(body)


def render(conversation: Conversation) -> object:
    """The wire body of a conversation, in the shape it was parsed from."""
    return get_adapter(conversation.format).render(conversation)


def check(
    body: object, format: FormatLike | None = None, *, warnings: bool = False
) -> list[Problem]:
    """What a provider would reject in this request, and where: ``[]`` when it is valid.
    It looks at the pairing of calls and results and at whether there is anything to send
    (``empty_request``). It does not check each message's fields against the provider's
    schema: what parsing cannot read raises :class:`~ctxwin.FormatError`, and what it can
    (a ``system`` role among Anthropic ``messages``, say) passes.

    ``warnings=True`` adds what providers accept but looks wrong (a result with empty
    content), with ``severity="warning"``.
    """
    adapter = _adapter(body, format)
    conv = adapter.parse(body)
    if not conv.messages:
        return [Problem("empty_request", NOTHING_TO_SEND, None, None, adapter.container)]
    return problems_of(conv, adapter, warnings=warnings)


class Repaired(NamedTuple):
    """What :func:`repair` returns: the repaired body and each fix made."""

    body: object
    fixes: list[Fix]


def repair(
    body: object,
    format: FormatLike | None = None,
    *,
    strict: bool = False,
    normalize: bool = False,
) -> Repaired:
    """Repair a request's pairing minimally; the input is never modified.

    What the provider accepts is left exactly as it is: parallel results answered out of
    order and empty results stay as they are unless ``normalize=True``. ``strict=True`` raises
    :class:`~ctxwin.PairingError` listing every problem instead of repairing. A request
    without messages, or one that repair would leave without any (every message a result
    whose call it does not hold), raises :class:`~ctxwin.InputError`: no provider accepts
    an empty request.
    """
    adapter = _adapter(body, format)
    conv = adapter.parse(body)
    if not conv.messages:
        raise InputError(NOTHING_TO_SEND, path=adapter.container)
    if strict:
        problems = problems_of(conv, adapter)
        if problems:
            raise PairingError(problems)
    fixed, fixes = repair_conversation(conv, adapter, normalize=normalize)
    if not fixed.messages:
        raise InputError(nothing_left(len(conv.messages)), path=adapter.container)
    if not fixes:
        return Repaired(adapter.render(conv), [])
    return Repaired(adapter.render(fixed), fixes)
