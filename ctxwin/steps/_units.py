"""The drops' units (:mod:`~._drops`): the messages that must go together with one, so
that no call loses its result, no call the server runs loses a block of it, and no item of
the model's loses the reasoning it was produced with (:mod:`~._runs`)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Message, Opaque, Text, ToolCall, ToolResult, is_user_text
from ctxwin.steps._runs import answered_run, followers, loose, model_run

__all__ = ["running", "spread_unit", "unit"]


def running(conv: Conversation, tie: str, last: int, k: int) -> bool:
    """Whether the server's call ``tie`` (its latest block at ``last``) may still send a
    block after ``k``: not closed by then (no result, no program output), and not left.
    Its opener must stay while it runs: its result with nothing before it is a 400.

    It is left when a message of the user's own follows (it ends the turn the call ran
    in), or when, after the client has handed the turn back (a result), the model writes
    something of its own (:func:`_own`) before any block of the call: the model writes
    nothing while the server runs a call it made. Once the client answers the calls a
    program made, the next response carries the program's next calls or its result first
    (Anthropic's programmatic tool calling: "either pauses again with more programmatic
    tool_use blocks, or completes the code execution and lets Claude continue the turn";
    OpenAI's: the ``program_output``, then the model's message), and a server tool deferred
    while a client tool ran has its result at the top of the next response
    (anthropics/anthropic-sdk-typescript#1090). Within the response that made the call
    the model may write on (a direct call beside a deferred server tool, which a history
    keeping each block in a message of its own shows as later messages): that says
    nothing. Left by the model, a call would otherwise have held all after it until the
    user's next message (an ``advisor`` call a ``pause_turn`` left without its result,
    which the client sends back as it came)."""
    if conv.tie_closed.get(tie, k + 1) <= k:
        return False
    handed = False  # the client has had the turn since the call's latest block
    for m in range(last + 1, k + 1):
        msg = conv.messages[m]
        if is_user_text(msg):
            return False
        if msg.role in ("user", "tool"):
            handed = True
        elif handed and msg.role == "assistant" and _own(msg):
            return False
    return True


def _own(msg: Message) -> bool:
    """Whether the model wrote something of its own in ``msg``: text, a call of its own,
    or a call the server runs that it made itself (not a program). Blocks tied to a
    server's call, reasoning and thinking (they may come before a program's call), and what
    ctxwin cannot read (an ``item_reference`` may stand for a program's item) say nothing."""
    for b in msg.blocks:
        if isinstance(b, Text) or (isinstance(b, ToolCall) and b.tie is None):
            return True
        if isinstance(b, Opaque) and b.opens is not None and b.tie is None:
            return True
    return False


def unit(conv: Conversation, i: int, k: int, cut: Mapping[int, frozenset[int]]) -> tuple[int, int]:
    """The smallest run of messages around ``i`` that can go without splitting a call from
    its result: every round with a message in it, with all its results, and every call the
    server runs with a block in it (:attr:`~ctxwin._core.model.Opaque.opens`, ``tie``: a
    server tool's use and its result, a program and the calls it made), with all its blocks
    up to ``k``, closed under that. A round with a result after ``k`` (not yet folded) ends
    after ``k``; a server's call is seen as ``messages[: k + 1]`` holds it, as a fold resumed
    from a shorter request saw it, and so are a call's further results (``Round.more``: one
    that comes after the round went goes as it comes, :func:`late`). The blocks of ``cut``
    (by message: gone already, see :func:`late`) hold nothing."""
    pairing = conv.pairing
    lo = hi = i
    seen: set[int] = set()
    tied: set[str] = set()
    j = lo
    while j <= hi and j < len(conv.messages):  # hi may be k + 1: something still to come
        rounds, ties = _links(conv, j, k, cut, tied)
        for members, last, still in ties:
            hi = max(hi, k + 1 if still else last)
            if members[0] < lo:
                lo, j = members[0], members[0] - 1
        for r in rounds - seen:
            seen.add(r)
            rnd = pairing.rounds[r]
            ends = [rnd.end, *(loc[0] for loc in rnd.results.values())]
            ends.extend(loc[0] for loc in rnd.more if loc[0] <= k)  # later ones: late()
            if len(rnd.results) < len(rnd.calls):
                ends.append(k + 1)  # a result still to come
            if rnd.start < lo:
                lo, j = rnd.start, rnd.start - 1
            hi = max(hi, *ends)
        j += 1
    return lo, hi


def spread_unit(
    conv: Conversation, i: int, k: int, cut: Mapping[int, frozenset[int]]
) -> tuple[list[int], bool]:
    """:func:`unit` where results may stand anywhere after their call (Responses): the
    messages that must go with message ``i``, ascending, not the run between them. A
    round brings its turn and the messages of its results, not what stands between (an
    output sent long after its call, other turns before it: the provider pairs by call id,
    so those may go, and the round may stay while they do); a call the server runs brings
    the run of its blocks, as :func:`unit` has it; a run of the model's items brings the
    whole run and the items answering it with no call in the request, an item so answering
    brings its run (:func:`_run_members`). A member after ``k`` (a result not yet folded, a
    turn still open) says the unit cannot go yet; ``True`` with it when a call the server
    runs may still send a block (:func:`running`): all after it stays then."""
    pairing = conv.pairing
    got = {i}
    todo = [i]
    rounds: set[int] = set()
    tied: set[str] = set()
    live = False

    def add(m: int) -> None:
        if m not in got:
            got.add(m)
            todo.append(m)

    while todo:
        j = todo.pop()
        if j > k:
            continue  # not yet folded: it holds the unit back, nothing more
        for m in _run_members(conv, j, k):
            add(m)
        found, ties = _links(conv, j, k, cut, tied)
        for members, last, still in ties:
            if still:
                live = True
                add(k + 1)
            for m in range(min(members[0], j), last + 1):
                add(m)
        for r in found - rounds:
            rounds.add(r)
            rnd = pairing.rounds[r]
            for m in (*range(rnd.start, rnd.end + 1), *(loc[0] for loc in rnd.results.values())):
                add(m)
            for loc in rnd.more:  # a further output after k may never come: late() drops it
                if loc[0] <= k:
                    add(loc[0])
            if len(rnd.results) < len(rnd.calls):
                add(k + 1)  # a result still to come
    return sorted(got), live


def _run_members(conv: Conversation, j: int, k: int) -> list[int]:
    """What message ``j`` brings to its unit as a run of the model's items
    (:mod:`~._runs`): an assistant message its run, the loose items answering the run, and
    ``k + 1`` while, the run being no round's turn, more may come; a loose item its run."""
    if loose(conv, j):
        end = answered_run(conv, j)
        return [] if end is None else [end]
    if conv.messages[j].role != "assistant":
        return []
    run = model_run(conv, j, k)
    more, waits = followers(conv, run[-1], k)
    if waits and conv.pairing.round_of_message.get(j) is None:
        more.append(k + 1)
    return [*run, *more]


def _links(
    conv: Conversation, j: int, k: int, cut: Mapping[int, frozenset[int]], tied: set[str]
) -> tuple[set[int], list[tuple[Sequence[int], int, bool]]]:
    """What message ``j`` is tied to (the blocks of ``cut`` hold nothing): its round and the
    rounds of its results' calls, and each call the server runs that it has a block of and
    that ``tied`` does not hold yet (added to it): that call's blocks, the last of them up to
    ``k``, and whether it may still send one (:func:`running`)."""
    pairing = conv.pairing
    rounds: set[int] = set()
    r = pairing.round_of_message.get(j)
    if r is not None:
        rounds.add(r)
    ties: list[tuple[Sequence[int], int, bool]] = []
    gone = cut.get(j, ())
    for bi, b in enumerate(conv.messages[j].blocks):
        if bi in gone:
            continue
        if isinstance(b, ToolResult):
            call = pairing.call_of.get((j, bi))
            if call is not None and call[0] in pairing.round_of_message:
                rounds.add(pairing.round_of_message[call[0]])
        elif isinstance(b, Opaque | ToolCall):
            for t in (b.opens, b.tie) if isinstance(b, Opaque) else (b.tie,):
                if t is None or t in tied:
                    continue
                tied.add(t)
                members = conv.ties[t]
                upto = bisect_right(members, k)
                last = members[upto - 1] if upto else j
                ties.append((members, last, running(conv, t, last, k)))
    return rounds, ties
