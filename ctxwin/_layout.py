"""A trace's layout as the optimum of a policy's family sees it (:mod:`ctxwin._optimum`):
prefix tokens, what clearing each round saves, what dropping each unit frees.

Where the provider drops the reasoning items of earlier turns before it reads a request
(``Overheads.drops_earlier_reasoning``, OpenAI), a request's tokens depend on where its latest
message of the user's own is: each such message that leaves reasoning items behind starts a
frame of its own (:attr:`Layout.turns`), the same layout with those items counting nothing,
saving nothing when cleared, and changing nothing the provider reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import (
    Message,
    Opaque,
    ToolCall,
    earlier_reasoning,
    is_plain_text,
    is_user_text,
    opens_turn,
    speaks,
)
from ctxwin.steps._base import Context
from ctxwin.steps._clearing import plan_result
from ctxwin.steps._drops import late_blocks
from ctxwin.steps._reasoning import clearable_reasoning
from ctxwin.steps._words import own_blocks

__all__ = ["Layout", "frame_of", "layout"]


@dataclass(frozen=True, slots=True)
class Layout:
    """A trace's rounds and units as a window sees them: prefix tokens, what clearing each
    round saves, what dropping each unit frees."""

    prefix: list[int]
    """Tokens of the envelope and the first ``k`` messages, for each ``k``."""
    round_start: list[int]
    round_end: list[int]
    """The last message of each round's turn and results."""
    saves: list[int]
    span: list[int]
    """Tokens of each round's messages as edited (before clearing)."""
    first: list[int | None]
    """The first message clearing each round changes (None: clearing it changes nothing)."""
    drop_start: int = 0
    """The first message a drop may take (after the leading system messages and the first
    user message)."""
    unit_end: tuple[int, ...] = ()
    """The last message of each droppable unit, oldest first (units follow one another
    from ``drop_start``)."""
    user_texts: tuple[int, ...] = ()
    """User messages (not results) after ``drop_start``: the window keeps the latest one
    through a drop."""
    round_call: tuple[int, ...] = ()
    """The first call message of each round, where the window sees the round begin."""
    hidden: tuple[int, ...] = ()
    """The messages this frame's requests hold that the provider does not read (they count
    nothing here)."""
    start: int = -1
    """The message of the user's own that starts this frame (-1: the first frame)."""
    clears: tuple[tuple[int, int], ...] = ()
    """The reasoning items clearing a round takes with it, as ``(message, round)``."""
    turns: tuple[Layout, ...] = ()
    """The frames of later requests, in order: a request holding the message that starts
    one (and none that starts a later one) is laid out by it."""
    openers: tuple[int, ...] = ()
    """Per user message of ``user_texts``, the first assistant message after it when it
    opens with what the provider requires (:func:`~ctxwin._core.model.opens_turn`; -1:
    none): the window keeps it with its user message."""
    head_opener: int = -1
    """The same for the last user message before ``drop_start``."""
    words: tuple[tuple[int, int], ...] = ()
    """The messages after ``drop_start`` with the user's words after tool results (Anthropic,
    Gemini: :func:`~ctxwin._core.model.speaks`), with the tokens of those words: a drop
    that takes such a message's round while they are the latest the user said keeps them
    (:mod:`ctxwin.steps._words`)."""


def frame_of(lay: Layout, n: int) -> Layout:
    """The frame of the request of the first ``n`` messages (see :attr:`Layout.turns`)."""
    out = lay
    for frame in lay.turns:
        if frame.start >= n:
            break
        out = frame
    return out


def layout(conv: Conversation, ctx: Context) -> Layout:
    """The layout of a conversation (results already edited as the policy edits them)."""
    messages = conv.messages
    late = late_blocks(conv)
    tokens = [_tokens(ctx, msg, late.get(k)) for k, msg in enumerate(messages)]
    rounds = conv.pairing.rounds
    saves = [0] * len(rounds)
    first: list[int | None] = [None] * len(rounds)
    ends = [max([r.end, *(loc[0] for loc in r.outputs)]) for r in rounds]
    for ref in conv.results():
        if ref.round is None or ref.loc[1] in late.get(ref.loc[0], ()):
            continue
        plan = plan_result(conv, ref.loc[0], ref.loc[1], ctx)
        if plan is None:
            continue
        saves[ref.round] += plan.saves
        at = plan.call_loc[0] if plan.call_saved and plan.call_loc else ref.loc[0]
        old = first[ref.round]
        first[ref.round] = at if old is None else min(old, at)
    reasoning = clearable_reasoning(conv) if ctx.config.window.clear_reasoning else []
    starts = [r.start for r in rounds]
    head = _drop_start(conv)
    texts = tuple(k for k, msg in enumerate(messages) if k >= head and is_user_text(msg))
    said = [k for k, msg in enumerate(messages) if k >= head and speaks(msg) and k not in texts]
    in_head = [k for k in range(head) if is_user_text(messages[k])]
    head_opener = _opener(conv, in_head[-1]) if in_head else -1
    calls = tuple(min((c[0] for c in r.calls), default=r.start) for r in rounds)
    base = Layout(
        [],
        starts,
        ends,
        saves,
        [],
        first,
        head,
        _units(len(messages), starts, ends, head, _tie_spans(conv, late)),
        texts,
        calls,
        openers=tuple(_opener(conv, k) for k in texts),
        head_opener=head_opener,
        words=tuple((k, _words_tokens(ctx, messages[k])) for k in said),
    )
    envelope = ctx.envelope_tokens(conv)
    out = _frame(base, envelope, tokens, reasoning, set())
    if not ctx.meter.overheads.drops_earlier_reasoning:
        return out
    turns = []
    hidden: set[int] = set()
    for u, msg in enumerate(messages):
        now = set(earlier_reasoning(messages[: u + 1])) if is_user_text(msg) else hidden
        if now != hidden:  # the user's message leaves reasoning behind: a new frame
            hidden = now
            turns.append(replace(_frame(base, envelope, tokens, reasoning, hidden), start=u))
    return replace(out, turns=tuple(turns))


def _frame(
    base: Layout,
    envelope: int,
    tokens: list[int],
    reasoning: list[tuple[int, int]],
    hidden: set[int],
) -> Layout:
    """``base`` with the messages of ``hidden`` counting nothing, and the reasoning items
    ``clear_reasoning`` clears with each round (``(round, message)``) added to it, but for
    those hidden."""
    prefix = [envelope]
    for k, t in enumerate(tokens):
        prefix.append(prefix[-1] + (0 if k in hidden else t))
    saves, first = list(base.saves), list(base.first)
    for r, mi in reasoning:
        if mi in hidden:
            continue
        saves[r] += tokens[mi]
        old = first[r]
        first[r] = mi if old is None else min(old, mi)
    span = [
        prefix[e + 1] - prefix[s] for s, e in zip(base.round_start, base.round_end, strict=True)
    ]
    hid = tuple(sorted(hidden))
    clears = tuple(sorted((mi, r) for r, mi in reasoning))
    return replace(
        base, prefix=prefix, saves=saves, span=span, first=first, hidden=hid, clears=clears
    )


def _tokens(ctx: Context, msg: Message, late: frozenset[int] | None) -> int:
    """A message's tokens, but for its blocks the window may drop as they come
    (:func:`~ctxwin.steps._drops.late_blocks`): the family counts them as nothing, as the
    window does once it has dropped the call they belong to; where it had not, the window
    pays them and the optimum is lower than it need be. (Where such a block comes before
    its call was dropped, the window joins it to the call's unit and may drop deeper than
    the family's finer units: there the family is not always below the window; README.)"""
    if not late:
        return ctx.message_tokens(msg)
    kept = tuple(b for bi, b in enumerate(msg.blocks) if bi not in late)
    return ctx.message_tokens(msg.with_blocks(kept)) if kept else 0


def _words_tokens(ctx: Context, msg: Message) -> int:
    """The tokens of the user's words in a message of results (:mod:`ctxwin.steps._words`
    keeps them through a drop)."""
    return ctx.message_tokens(msg.with_blocks(own_blocks(msg)))


def _tie_spans(conv: Conversation, late: dict[int, frozenset[int]]) -> list[tuple[int, int]]:
    """The first and last message of each server's call that holds more than one, leaving
    out its blocks the window may drop as they come: once the call is left, the window may
    drop it without them (``_drops.late``), and so may the family."""
    spans = []
    for t, members in conv.ties.items():
        live = [
            m
            for m in members
            if any(
                bi not in late.get(m, ())
                for bi, b in enumerate(conv.messages[m].blocks)
                if isinstance(b, Opaque | ToolCall)
                and (b.tie == t or (isinstance(b, Opaque) and b.opens == t))
            )
        ]
        if len(live) > 1:
            spans.append((live[0], live[-1]))
    return spans


def _drop_start(conv: Conversation) -> int:
    """Where the window's drops begin: after the first user message (not a result), or,
    without one, after the last system message and the plain text message right after it
    (the task, in whatever role it came; see :func:`~ctxwin.steps._fold` ``_enter``)."""
    start = 0
    messages = conv.messages
    for k, msg in enumerate(messages):
        if is_user_text(msg):
            return k + 1
        if msg.role == "system":
            start = k + 1
    if start < len(messages) and is_plain_text(messages[start]):
        start += 1
    return start


def _opener(conv: Conversation, k: int) -> int:
    """The first assistant message after user message ``k`` (before the next one), when it
    opens its turn as the provider requires (``_fold._enter`` keeps it the same way); -1
    otherwise."""
    if not conv.rules.turn_openers:
        return -1
    messages = conv.messages
    for j in range(k + 1, len(messages)):
        if is_user_text(messages[j]):
            return -1
        if messages[j].role == "assistant":
            return j if opens_turn(messages[j], conv.rules) else -1
    return -1


def _units(
    n: int, starts: list[int], ends: list[int], head: int, ties: Iterable[tuple[int, int]] = ()
) -> tuple[int, ...]:
    """The droppable units from ``head``: each round closed over the rounds its messages
    reach, or a single message, as :func:`~ctxwin.steps._drops.unit` has them: the messages
    of a call the server runs (``ties``, the first and last of each) go together too. None
    when a round or such a call begins before ``head``. The window also keeps all after such
    a call while it runs (``_drops._running``); knowing the whole trace, the family may drop
    it once its last block is out of the kept rounds (but see :func:`_tokens` on blocks
    that come late)."""
    spans = [*zip(starts, ends, strict=True), *ties]
    if any(s < head for s, _ in spans):
        return ()
    reach = list(range(n))
    for s, e in spans:
        reach[s] = max(reach[s], e)
    out: list[int] = []
    i = head
    while i < n:
        hi, j = reach[i], i
        while j <= hi:
            hi = max(hi, reach[j])
            j += 1
        out.append(hi)
        i = hi + 1
    return tuple(out)
