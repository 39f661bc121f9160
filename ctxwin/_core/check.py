"""Checking: what a provider would reject, located in the request.

``find(conv)`` lists every finding neutrally; ``problems_of(conv, describer)`` turns them
into :class:`~ctxwin._core.records.Problem` records with the paths and provider texts of
the format (the ``describer``, an adapter, says those); ``has_errors`` answers the one
question the engine asks before each request, looking only at rounds that may have changed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import (
    Loc,
    Message,
    Opaque,
    ToolCall,
    ToolResult,
    call_at,
    result_at,
)
from ctxwin._core.pairing import Round, Verdicts
from ctxwin._core.records import ERROR_CODES, Fix, Problem, ProblemCode

__all__ = [
    "NOTHING_TO_SEND",
    "Describer",
    "Finding",
    "Findings",
    "by_program",
    "find",
    "first_misplaced",
    "has_errors",
    "in_place",
    "nothing_left",
    "problems_of",
    "unopened",
]

NOTHING_TO_SEND = "the request has no messages: nothing to send"
"""What is wrong with a request without messages (every provider refuses one)."""


def nothing_left(count: int, fixes: Sequence[Fix] = ()) -> str:
    """What is wrong when repairing a request of ``count`` messages left none (``fixes``:
    what repair did): each was a result whose call the request does not hold, or what went
    with one (a reasoning item with nothing of its turn after it, say)."""
    if any("result answers no call" not in f.description for f in fixes):
        whys = "; ".join(dict.fromkeys(f.description for f in fixes[:3]))
        what = "the only message" if count == 1 else f"all {count:,} messages"
        return f"nothing is left after repair: {what} went ({whys})"
    what = (
        "the only message was a result of a call that is"
        if count == 1
        else f"all {count:,} messages were results of calls that are"
    )
    return (
        f"nothing is left after repair: {what} not in the request (if the calls live on the "
        "provider's side, send previous_response_id or conversation)"
    )


class Describer(Protocol):
    """What check and repair need of a format to speak of a place in its request."""

    def block_path(self, msg: Message, block: int) -> str:
        """JSON path of a block in the request (``messages[3].tool_calls[1]``)."""
        ...

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        """What the provider answers for this problem (or a plain statement of it)."""
        ...


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem, neutrally: its code, where it is, the call id and tool it concerns."""

    code: ProblemCode
    loc: Loc
    call_id: str | None
    tool: str | None


@dataclass
class Findings:
    found: list[Finding] = field(default_factory=list)
    bad_rounds: set[int] = field(default_factory=set)
    """Rounds a repair must rebuild."""


def in_place(conv: Conversation, rnd: Round, call: Loc, res: Loc) -> bool:
    """Whether the result at ``res`` stands where the format wants the answer to ``call``."""
    messages = conv.messages
    rules = conv.rules
    if rules.placement == "anywhere_after":
        return res[0] > call[0]
    if rules.placement == "next_message":
        return res[0] == rnd.end + 1 and messages[res[0]].role == rules.carrier_role
    # adjacent: inside the run of carrier messages right after the turn
    k = rnd.end + 1
    while k < len(messages) and messages[k].role == rules.carrier_role:
        if k == res[0]:
            return True
        k += 1
    return False


def _round_findings(conv: Conversation, rnd: Round) -> list[Finding]:
    """The problems of one round: missing, misplaced, without content, duplicate ids,
    results not first."""
    messages = conv.messages
    rules = conv.rules
    out: list[Finding] = []
    seen_ids: dict[str, Loc] = {}
    for c in rnd.calls:
        call = call_at(messages, c)
        if call.id is not None:
            if call.id in seen_ids and (
                rules.turn == "consecutive" or seen_ids[call.id][0] == c[0]
            ):
                out.append(Finding("duplicate_call_id", c, call.id, call.name))
            seen_ids[call.id] = c
        res_loc = rnd.results.get(c)
        if res_loc is None:
            if not by_program(conv, rnd, c):
                out.append(Finding("missing_result", c, call.id, call.name))
            continue
        if not in_place(conv, rnd, c, res_loc):
            out.append(Finding("misplaced_result", res_loc, call.id, call.name))
        if rules.results_need_content and _lacks_content(messages, res_loc):
            out.append(Finding("missing_content", res_loc, call.id, call.name))
    if rules.results_first and rnd.results and rnd.end + 1 < len(messages):
        seen_other = False
        for bi, b in enumerate(messages[rnd.end + 1].blocks):
            if isinstance(b, ToolResult):
                if seen_other:
                    out.append(Finding("results_not_first", (rnd.end + 1, bi), b.call_id, b.name))
                    break
            else:
                seen_other = True
    return out


def by_program(conv: Conversation, rnd: Round, c: Loc) -> bool:
    """Whether the call at ``c`` has no result of its own and counts as answered: a call a
    server-run program made, where the format lets a program's outputs leave out the call id
    (:attr:`~ctxwin._core.model.PairingRules.program_outputs`), with an item of its program
    after it (the program went on past the call, so it was answered)."""
    tie = call_at(conv.messages, c).tie
    if not conv.rules.program_outputs or tie is None or c in rnd.results:
        return False
    return any(m > c[0] for m in conv.ties.get(tie, ()))


def _lacks_content(messages: tuple[Message, ...], loc: Loc) -> bool:
    """A result with an id and no content at all (not even empty text)."""
    res = result_at(messages, loc)
    return not res.content and res.call_id is not None


def unopened(conv: Conversation) -> list[Finding]:
    """Blocks tied to a call the server runs with no block opening that call before them
    (:attr:`~ctxwin._core.pairing.Pairing.unopened`): a server tool's result, or a call a
    program made (a client's call too), whose server_tool_use or program is not in the
    request. The provider rejects them (Anthropic: "Each `web_search_tool_result` block must
    have a corresponding `server_tool_use` block before it"). A call names its own id and
    tool; a server's block, the id of the call it is tied to."""
    messages = conv.messages
    out: list[Finding] = []
    for loc in conv.pairing.unopened:
        b = messages[loc[0]].blocks[loc[1]]
        if isinstance(b, ToolCall):
            out.append(Finding("orphan_result", loc, b.id, b.name))
        elif isinstance(b, Opaque):
            out.append(Finding("orphan_result", loc, b.tie, None))
    return out


def _request_wide(conv: Conversation) -> list[Finding]:
    """What the provider refuses across turns: a call whose id an earlier turn's call has,
    where the format wants call ids unique in the request (Anthropic: "`tool_use` ids must
    be unique"), and a block that needs an item of its turn after it with none (Responses:
    "Item 'rs_...' of type 'reasoning' was provided without its required following item",
    an ``orphan_result`` as the other blocks without the block they go with are)."""
    pairing = conv.pairing
    messages = conv.messages
    out = [
        Finding("duplicate_call_id", loc, (c := call_at(messages, loc)).id, c.name)
        for loc in pairing.reused_ids
    ]
    out.extend(Finding("orphan_result", loc, None, None) for loc in pairing.unfollowed)
    for mi in pairing.repeated_items:
        block = messages[mi].blocks[0] if messages[mi].blocks else None
        call_id = block.id if isinstance(block, ToolCall) else None
        if isinstance(block, ToolResult):
            call_id = block.call_id
        out.append(Finding("duplicate_item_id", (mi, 0), call_id, None))
    return out


def first_misplaced(conv: Conversation) -> int | None:
    """The first message, when the format wants another role there (Anthropic: a user)."""
    want = conv.rules.first_role
    calls_only = conv.rules.first_calls_only
    if want is None or (calls_only and conv.server_state):
        return None
    for mi, msg in enumerate(conv.messages):
        if msg.role != "system":
            if calls_only and not msg.tool_calls:
                return None
            return None if msg.role == want or (want == "user" and msg.role == "tool") else mi
    return None


def has_errors(conv: Conversation, cache: Verdicts | None = None) -> bool:
    """Whether a provider would reject ``conv``. ``cache`` remembers the verdict of rounds
    that cannot change any more (the linker keeps them as the same objects), so a request
    that grew by a round checks that round only."""
    pairing = conv.pairing
    if (
        pairing.orphans
        or pairing.duplicates
        or pairing.unopened
        or pairing.reused_ids
        or pairing.unfollowed
        or pairing.repeated_items
        or first_misplaced(conv) is not None
    ):
        return True
    rounds = pairing.rounds
    start = 0
    if cache is not None and cache.ok_upto <= len(rounds):
        ok_upto = cache.ok_upto
        if ok_upto and rounds[ok_upto - 1] is cache.rounds.get(ok_upto - 1, (None,))[0]:
            start = ok_upto
    bad = False
    leading_ok = start
    for rnd in rounds[start:]:
        hit = cache.rounds.get(rnd.index) if cache is not None else None
        if hit is not None and hit[0] is rnd:
            ok = hit[1]
        else:
            ok = not _round_findings(conv, rnd)
            if cache is not None:
                cache.rounds[rnd.index] = (rnd, ok)
        bad = bad or not ok
        if not bad and cache is not None and rnd.index == leading_ok and hit is not None:
            leading_ok += 1  # final (found in the cache again) and accepted
    if cache is not None:
        cache.ok_upto = leading_ok
    return bad


def find(conv: Conversation, *, warnings: bool = True, gone: Collection[Loc] = ()) -> Findings:
    """Every finding of a conversation, in request order (``warnings``: advisories too).

    ``gone`` are blocks a repair takes away: a round is bad (to rebuild) only for a problem
    of another block, or for results not first in their message."""
    pairing = conv.pairing
    messages = conv.messages
    out = Findings()
    for rnd in pairing.rounds:
        found = _round_findings(conv, rnd)
        if found:
            out.found.extend(found)
            if any(f.loc not in gone or f.code == "results_not_first" for f in found):
                out.bad_rounds.add(rnd.index)
    for loc in pairing.orphans:
        res = result_at(messages, loc)
        out.found.append(Finding("orphan_result", loc, res.call_id, res.name))
    for loc, dup_call in pairing.duplicates:
        res = result_at(messages, loc)
        out.found.append(
            Finding("duplicate_result", loc, res.call_id, call_at(messages, dup_call).name)
        )
        rnd_of = pairing.round_of_message.get(dup_call[0])
        if rnd_of is not None:
            out.bad_rounds.add(rnd_of)
    first = first_misplaced(conv)
    if first is not None:
        out.found.append(Finding("first_not_user", (first, 0), None, None))
    out.found.extend(unopened(conv))
    out.found.extend(_request_wide(conv))
    if warnings:
        errors = {f.loc for f in out.found if f.code == "missing_content"}
        for ref in conv.results():
            if ref.result.is_empty and ref.loc not in errors:
                tool = ref.call.name if ref.call is not None else ref.result.name
                out.found.append(Finding("empty_result", ref.loc, ref.result.call_id, tool))
    out.found.sort(key=lambda f: f.loc)
    return out


def problems_of(
    conv: Conversation, describer: Describer, *, warnings: bool = False
) -> list[Problem]:
    """The problems of a conversation, in request order: what its provider would reject,
    and with ``warnings`` also what it accepts but looks wrong (empty results)."""
    result: list[Problem] = []
    for f in find(conv, warnings=warnings).found:
        msg = conv.messages[f.loc[0]]
        result.append(
            Problem(
                code=f.code,
                message=describer.problem_text(f.code, conv, f.loc, f.call_id),
                message_index=msg.index,
                block_index=f.loc[1],
                path=describer.block_path(msg, f.loc[1]),
                call_id=f.call_id,
                tool=f.tool,
                severity="error" if f.code in ERROR_CODES else "warning",
            )
        )
    return result
