"""The request-level API of the foundation: parse, render, check, repair."""

from __future__ import annotations

from typing import NamedTuple

from ctxwin._exceptions import PairingError
from ctxwin._model import Conversation
from ctxwin._problems import Problem, problems_of
from ctxwin._repair import Fix, repair_conversation
from ctxwin.formats import detect, get_adapter


def parse(body: object, format: str | None = None) -> Conversation:
    """A request body (or a bare list of messages/items) as a neutral conversation.

    ``format`` overrides detection (``openai-chat``, ``anthropic``, ``openai-responses``,
    ``gemini``). Raises :class:`~ctxwin.FormatError` with the path of what is malformed.
    """
    adapter = get_adapter(format or detect(body))
    return adapter.parse(body)


def render(conversation: Conversation) -> object:
    """The wire body of a conversation, in the shape it was parsed from."""
    return get_adapter(conversation.format).render(conversation)


def check(body: object, format: str | None = None) -> list[Problem]:
    """Every pairing problem of a request: what its provider would reject, and where.

    Problems of severity ``warning`` (an empty result) are accepted by providers but worth
    knowing; the others make the provider answer 400.
    """
    return problems_of(parse(body, format))


class Repaired(NamedTuple):
    """What :func:`repair` returns: the repaired body and each fix made."""

    body: object
    fixes: list[Fix]


def repair(
    body: object,
    format: str | None = None,
    *,
    strict: bool = False,
    normalize: bool = False,
) -> Repaired:
    """Repair a request's pairing minimally; the input is never modified.

    What the provider accepts is left exactly as it is: parallel results answered out of
    order and empty results stay as they are unless ``normalize=True``. ``strict=True`` raises
    :class:`~ctxwin.PairingError` listing every problem instead of repairing.
    """
    conv = parse(body, format)
    if strict:
        problems = [p for p in problems_of(conv) if p.severity == "error"]
        if problems:
            raise PairingError(problems)
    fixed, fixes = repair_conversation(conv, normalize=normalize)
    if not fixes:
        return Repaired(get_adapter(conv.format).render(conv), [])
    return Repaired(get_adapter(conv.format).render(fixed), fixes)
