"""Checking: what a provider would reject, located in the request.

``problems_of(conv)`` lists every problem; ``has_errors`` answers the one question the
engine asks before each request, looking only at rounds that may have changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxwin._model import Block, Conversation, Loc, ToolCall, ToolResult
from ctxwin._pairing import PairingRules, ProblemCode, Round


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing a provider would reject (severity ``error``) or that looks wrong (``warning``).

    ``message_index`` is the position in the request's message/item/content list,
    ``block_index`` the block within it (neutral order), ``path`` the JSON path of the
    offending part (``messages[7].tool_calls[0]``), ``message`` what the provider would say.
    """

    code: ProblemCode
    message: str
    message_index: int | None
    block_index: int | None
    path: str
    call_id: str | None = None
    tool: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        cid = f" [{self.call_id}]" if self.call_id else ""
        return f"{self.path}: {self.code}{cid}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message_index": self.message_index,
            "block_index": self.block_index,
            "path": self.path,
            "call_id": self.call_id,
            "tool": self.tool,
            "message": self.message,
        }


def _in_place(conv: Conversation, rules: PairingRules, rnd: Round, call: Loc, res: Loc) -> bool:
    messages = conv.messages
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


@dataclass
class _Findings:
    problems: list[tuple[ProblemCode, Loc, str | None, str | None]] = field(default_factory=list)
    bad_rounds: set[int] = field(default_factory=set)


def _round_problems(
    conv: Conversation, rules: PairingRules, rnd: Round
) -> list[tuple[ProblemCode, Loc, str | None, str | None]]:
    """The problems of one round: missing, misplaced, duplicate ids, results not first."""
    messages = conv.messages
    out: list[tuple[ProblemCode, Loc, str | None, str | None]] = []
    seen_ids: dict[str, Loc] = {}
    for c in rnd.calls:
        call = messages[c[0]].blocks[c[1]]
        assert isinstance(call, ToolCall)
        if call.id is not None:
            if call.id in seen_ids and (
                rules.turn == "consecutive" or seen_ids[call.id][0] == c[0]
            ):
                out.append(("duplicate_call_id", c, call.id, call.name))
            seen_ids[call.id] = c
        res_loc = rnd.results.get(c)
        if res_loc is None:
            out.append(("missing_result", c, call.id, call.name))
        elif not _in_place(conv, rules, rnd, c, res_loc):
            out.append(("misplaced_result", res_loc, call.id, call.name))
    if rules.results_first and rnd.results and rnd.end + 1 < len(messages):
        seen_other = False
        for bi, b in enumerate(messages[rnd.end + 1].blocks):
            if isinstance(b, ToolResult):
                if seen_other:
                    out.append(("results_not_first", (rnd.end + 1, bi), b.call_id, b.name))
                    break
            else:
                seen_other = True
    return out


def has_errors(conv: Conversation, cache: dict[int, tuple[Round, bool]] | None = None) -> bool:
    """Whether a provider would reject ``conv``. ``cache`` remembers the verdict of rounds
    that cannot change any more (the linker keeps them as the same objects)."""
    from ctxwin.formats import get_adapter

    pairing = conv.pairing
    if pairing.orphans or pairing.duplicates:
        return True
    rules = get_adapter(conv.format).rules
    bad = False
    for rnd in pairing.rounds:
        hit = cache.get(rnd.index) if cache is not None else None
        if hit is not None and hit[0] is rnd:
            ok = hit[1]
        else:
            ok = not _round_problems(conv, rules, rnd)
            if cache is not None:
                cache[rnd.index] = (rnd, ok)
        bad = bad or not ok
    return bad


def _find(conv: Conversation) -> _Findings:
    from ctxwin.formats import get_adapter

    rules = get_adapter(conv.format).rules
    pairing = conv.pairing
    messages = conv.messages
    out = _Findings()

    def block(loc: Loc) -> Block:
        return messages[loc[0]].blocks[loc[1]]

    for rnd in pairing.rounds:
        found = _round_problems(conv, rules, rnd)
        if found:
            out.problems.extend(found)
            out.bad_rounds.add(rnd.index)
    for loc in pairing.orphans:
        res = block(loc)
        assert isinstance(res, ToolResult)
        out.problems.append(("orphan_result", loc, res.call_id, res.name))
    for loc, dup_call in pairing.duplicates:
        res = block(loc)
        call = block(dup_call)
        assert isinstance(res, ToolResult)
        assert isinstance(call, ToolCall)
        out.problems.append(("duplicate_result", loc, res.call_id, call.name))
        rnd_of = pairing.round_of_message.get(dup_call[0])
        if rnd_of is not None:
            out.bad_rounds.add(rnd_of)
    for mi, msg in enumerate(messages):
        for bi, b in enumerate(msg.blocks):
            if isinstance(b, ToolResult) and b.is_empty:
                call_loc = pairing.call_of.get((mi, bi))
                name = b.name
                if call_loc is not None:
                    answered_call = block(call_loc)
                    assert isinstance(answered_call, ToolCall)
                    name = answered_call.name
                out.problems.append(("empty_result", (mi, bi), b.call_id, name))
    out.problems.sort(key=lambda p: p[1])
    return out


def problems_of(conv: Conversation) -> list[Problem]:
    """Every pairing problem of a conversation, in request order."""
    from ctxwin.formats import get_adapter

    adapter = get_adapter(conv.format)
    result: list[Problem] = []
    for code, loc, call_id, tool in _find(conv).problems:
        msg = conv.messages[loc[0]]
        result.append(
            Problem(
                code=code,
                message=adapter.problem_text(code, conv, loc, call_id),
                message_index=msg.index,
                block_index=loc[1],
                path=adapter.block_path(msg, loc[1]),
                call_id=call_id,
                tool=tool,
                severity="warning" if code == "empty_result" else "error",
            )
        )
    return result
