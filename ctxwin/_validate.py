"""The request-level API of the foundation: parse, render, check, repair."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import NamedTuple

from ctxwin._core.check import NOTHING_TO_SEND, nothing_left, problems_of
from ctxwin._core.conversation import Conversation
from ctxwin._core.records import Fix, Problem
from ctxwin._core.repair import repair_conversation
from ctxwin._exceptions import InputError, PairingError
from ctxwin.formats import Adapter, adapter_of, detect, get_adapter
from ctxwin.formats._tool_prompt import claude_rules

__all__ = [
    "FormatLike",
    "Repaired",
    "check",
    "checked_server_state",
    "parse",
    "render",
    "repair",
    "with_server_state",
]

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


def checked_server_state(server_state: object) -> bool | None:
    """``server_state=`` when it is True, False or None; a string (``"no"``) is truthy, so
    anything else is an :class:`~ctxwin.InputError` at ``server_state``."""
    if server_state is None or isinstance(server_state, bool):
        return server_state
    raise InputError(
        f"server_state= takes True, False or None, not {type(server_state).__name__}",
        path="server_state",
    )


def with_server_state(conv: Conversation, wanted: bool | None) -> Conversation:
    """``conv`` with ``server_state`` as ``wanted`` (None: as the body says)."""
    if wanted is None or wanted == conv.server_state:
        return conv
    return dataclasses.replace(conv, server_state=wanted, _pairing=[])


def _parsed(
    body: object, format: FormatLike | None, server_state: object
) -> tuple[Adapter, Conversation]:
    """The adapter and the parsed body; ``server_state`` (when given) overrides what the
    body says (``previous_response_id``, ``conversation``, an ``item_reference``). A body
    for a Claude model is held to Anthropic's rules (its ``model``: :func:`claude_rules`)."""
    wanted = checked_server_state(server_state)
    adapter = _adapter(body, format)
    model = body.get("model") if isinstance(body, Mapping) else None
    conv = with_server_state(adapter.parse(body), wanted)
    return adapter, claude_rules(conv, model if isinstance(model, str) else None)


def render(conversation: Conversation) -> object:
    """The wire body of a conversation, in the shape it was parsed from."""
    return adapter_of(conversation).render(conversation)


def check(
    body: object,
    format: FormatLike | None = None,
    *,
    warnings: bool = False,
    server_state: bool | None = None,
) -> list[Problem]:
    """What a provider would reject in this request, and where: ``[]`` when it is valid.
    It looks at the pairing of calls and results and at whether there is anything to send
    (``empty_request``). It does not check each message's fields against the provider's
    schema: what parsing cannot read raises :class:`~ctxwin.FormatError`, and what it can
    (a ``system`` role among Anthropic ``messages``, say) passes.

    ``warnings=True`` adds what providers accept but looks wrong (a result with empty
    content), with ``severity="warning"``. ``server_state=True`` says earlier turns live on
    the provider's side, so a result whose call is absent is no problem (as
    ``policy.apply(..., server_state=True)`` keeps it); by default the body says so
    (``previous_response_id``, ``conversation``, an ``item_reference``).
    """
    adapter, conv = _parsed(body, format, server_state)
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
    server_state: bool | None = None,
) -> Repaired:
    """Repair a request's pairing minimally; the input is never modified.

    What the provider accepts is left exactly as it is: parallel results answered out of
    order and empty results stay as they are unless ``normalize=True``. ``strict=True`` raises
    :class:`~ctxwin.PairingError` listing every problem instead of repairing. A request
    without messages, or one that repair would leave without any (every message a result
    whose call it does not hold), raises :class:`~ctxwin.InputError`: no provider accepts
    an empty request. ``server_state`` is :func:`check`'s: with ``True`` a result whose
    call is absent is kept, not dropped.
    """
    adapter, conv = _parsed(body, format, server_state)
    if not conv.messages:
        raise InputError(NOTHING_TO_SEND, path=adapter.container)
    if strict:
        problems = problems_of(conv, adapter)
        if problems:
            raise PairingError(problems)
    fixed, fixes = repair_conversation(conv, adapter, normalize=normalize)
    if not fixed.messages:
        raise InputError(nothing_left(len(conv.messages), fixes), path=adapter.container)
    if not fixes:
        return Repaired(adapter.render(conv), [])
    return Repaired(adapter.render(fixed), fixes)
