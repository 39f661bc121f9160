"""The drops' units of what is no round (:mod:`~._drops`): a run of the model's items with
no client call in it (an answer with its reasoning, an approval request, references to
items the server holds), the outputs that answer it, and results whose call lives on the
provider's side.

Where results may stand anywhere after their call (Responses), the model's items of one
run go together, as a round's turn does: a reasoning item with the items after it that
need it (an ``mcp_approval_request``, a message with an id), and ``item_reference`` items
with those they stand for. The client's items after the run that answer it with no call in
the request (an ``mcp_approval_response``, the output of a call only referenced) go with
it: until the run's next message of another kind, more may come, and the unit waits.

Under server state a result whose call is not in the request, with no run of the model's
before it to answer, answers a call on the provider's side (the previous response's, a
Gemini ``cachedContent``'s): dropped, the provider refuses the request ("No tool output
found for function call"), so it stays (:func:`pinned`)."""

from __future__ import annotations

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Opaque, ToolResult

__all__ = ["answered_run", "followers", "loose", "model_run", "newest_answered", "pinned"]


def loose(conv: Conversation, j: int) -> bool:
    """Whether message ``j`` is the client's answer to the model with no call in the
    request to pair it to: a ``tool`` message of unpaired results and opaque items."""
    msg = conv.messages[j]
    if msg.role != "tool" or not msg.blocks:
        return False
    call_of = conv.pairing.call_of
    return all(
        isinstance(b, Opaque) or (isinstance(b, ToolResult) and (j, bi) not in call_of)
        for bi, b in enumerate(msg.blocks)
    )


def model_run(conv: Conversation, j: int, k: int) -> range:
    """The run of the model's messages around ``j`` (an assistant message), up to ``k``."""
    messages = conv.messages
    lo = j
    while lo > 0 and messages[lo - 1].role == "assistant":
        lo -= 1
    hi = j
    while hi < k and messages[hi + 1].role == "assistant":
        hi += 1
    return range(lo, hi + 1)


def answered_run(conv: Conversation, j: int) -> int | None:
    """The last message of the run of the model's messages that the loose message ``j``
    answers (the nearest before it, past other results), or None: none before it."""
    m = _before_results(conv)[j]
    return m if m >= 0 and conv.messages[m].role == "assistant" else None


_LAST: tuple[Conversation, list[int]] | None = None
"""The conversation :func:`_before_results` last read, with what it found."""


def _before_results(conv: Conversation) -> list[int]:
    """For each message of ``conv``, the nearest message before it that is no ``tool``
    message (-1: none), read once per conversation: a drop asks it of every unit at each
    message it folds, and a run of thousands of outputs (a previous response's parallel
    calls) walked back at each ask made a request cubic in them (2,000 outputs: minutes)."""
    global _LAST
    last = _LAST  # one read: another thread may replace it meanwhile
    if last is not None and last[0] is conv:
        return last[1]
    found: list[int] = []
    m = -1
    for msg in conv.messages:
        found.append(m)
        if msg.role != "tool":
            m = len(found) - 1
    _LAST = (conv, found)
    return found


def followers(conv: Conversation, end: int, k: int) -> tuple[list[int], bool]:
    """The loose messages after the run ending at ``end``, up to ``k``, and whether more
    may come (nothing but results after the run up to ``k``)."""
    messages = conv.messages
    out: list[int] = []
    m = end + 1
    while m <= k and messages[m].role == "tool":
        if loose(conv, m):
            out.append(m)
        m += 1
    return out, m > k


def pinned(conv: Conversation, j: int, spread: bool) -> bool:
    """Whether message ``j`` holds, under server state, a result whose call is not in the
    request and that answers no run of the model's before it (``spread``: where results
    may stand anywhere after their call; else any unpaired result): its call is on the
    provider's side, and the drops keep it."""
    if not conv.server_state:
        return False
    call_of = conv.pairing.call_of
    unpaired = any(
        isinstance(b, ToolResult) and (j, bi) not in call_of
        for bi, b in enumerate(conv.messages[j].blocks)
    )
    if not unpaired:
        return False
    return not (spread and loose(conv, j) and answered_run(conv, j) is not None)


def newest_answered(conv: Conversation, k: int, stop: int) -> int:
    """The first message of the newest run of the model's messages that loose messages
    answer, from ``stop`` up to ``k`` (-1: none): with no round in the request it stands
    for the newest round, which drops keep."""
    for m in range(k, stop - 1, -1):
        if loose(conv, m):
            end = answered_run(conv, m)
            if end is not None and end >= stop:
                return model_run(conv, end, k).start
    return -1
