"""Pairing: which result answers which call, what a provider would reject, and minimal repair.

Everything here works on the neutral :class:`~ctxwin._model.Conversation`; what differs
between providers is stated by each adapter as :class:`PairingRules` (where results must
stand) and its error texts.

Results pair **by position**, never by a global id lookup: real traces reuse call ids across
turns. A result answers the most recent unanswered call with its id before it (or, without
ids, the first unanswered call of the same name in the nearest turn before it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from ctxwin._model import (
    Block,
    Conversation,
    Loc,
    Message,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from ctxwin.formats._base import Adapter

ProblemCode: TypeAlias = Literal[
    "missing_result",
    "misplaced_result",
    "orphan_result",
    "duplicate_result",
    "results_not_first",
    "duplicate_call_id",
    "empty_result",
]
FixCode: TypeAlias = Literal[
    "added_missing_result",
    "moved_result",
    "dropped_orphan_result",
    "dropped_duplicate_result",
    "reordered_results",
    "filled_empty_result",
    "renamed_duplicate_call_id",
]

EMPTY_RESULT_TEXT = "(empty result)"
MISSING_RESULT_TEXT = "tool result missing: the call was interrupted"


@dataclass(frozen=True, slots=True)
class PairingRules:
    """Where a format wants tool results, stated neutrally by its adapter.

    - ``turn``: ``"message"`` when each assistant message with calls is its own round
      (chat messages, Anthropic, Gemini), ``"consecutive"`` when a run of assistant items is
      one turn (Responses items: reasoning, function_call, function_call...).
    - ``placement``: ``"adjacent"`` — result messages directly after the turn, nothing
      between (OpenAI Chat); ``"next_message"`` — all results in the one message right after
      the turn (Anthropic, Gemini); ``"anywhere_after"`` — anywhere later (Responses).
    - ``carrier``: results travel one per message, or grouped in one message.
    - ``carrier_role``: the neutral role of a message that carries results.
    - ``results_first``: results must come before any other block in their message.
    - ``ids_optional``: calls may have no id (Gemini); results then pair by order and name.
    """

    turn: Literal["message", "consecutive"]
    placement: Literal["adjacent", "next_message", "anywhere_after"]
    carrier: Literal["one_per_message", "grouped"]
    carrier_role: Role
    results_first: bool = False
    ids_optional: bool = False


@dataclass(frozen=True, slots=True)
class Round:
    """One assistant turn with tool calls, and where their results are.

    ``start``/``end`` are the turn's first and last message positions (inclusive);
    ``results`` maps each answered call to its (first) result.
    """

    index: int
    start: int
    end: int
    calls: tuple[Loc, ...]
    results: dict[Loc, Loc] = field(default_factory=dict)

    @property
    def messages(self) -> range:
        return range(self.start, self.end + 1)


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairing of a conversation, as found (possibly with problems)."""

    rounds: tuple[Round, ...]
    call_of: dict[Loc, Loc]
    """result location -> call location, for every result that answers a call."""
    round_of_message: dict[int, int]
    """message position -> round index, for the messages of each turn with calls."""
    orphans: tuple[Loc, ...]
    duplicates: tuple[tuple[Loc, Loc], ...]
    """(result, call) for results answering a call that an earlier result already answered."""
    server_side: tuple[Loc, ...]
    """results whose call lives on the provider's side (``previous_response_id``)."""

    def round_of_result(self, loc: Loc) -> int | None:
        call = self.call_of.get(loc)
        return None if call is None else self.round_of_message.get(call[0])


def _turns(messages: tuple[Message, ...], rules: PairingRules) -> list[tuple[int, int]]:
    """(start, end) of every assistant turn that makes tool calls."""
    turns: list[tuple[int, int]] = []
    n = len(messages)
    i = 0
    while i < n:
        msg = messages[i]
        if msg.role != "assistant":
            i += 1
            continue
        j = i
        if rules.turn == "consecutive":
            while j + 1 < n and messages[j + 1].role == "assistant":
                j += 1
        if any(isinstance(b, ToolCall) for k in range(i, j + 1) for b in messages[k].blocks):
            turns.append((i, j))
        i = j + 1
    return turns


def link(conv: Conversation) -> Pairing:
    """Pair every result with its call, by position."""
    from ctxwin.formats import get_adapter

    rules = get_adapter(conv.format).rules
    messages = conv.messages
    turns = _turns(messages, rules)
    turn_at: dict[int, int] = {}
    for t, (s, e) in enumerate(turns):
        for k in range(s, e + 1):
            turn_at[k] = t
    round_calls: list[list[Loc]] = [[] for _ in turns]
    answered: dict[Loc, Loc] = {}
    call_of: dict[Loc, Loc] = {}
    calls_by_id: dict[str, list[Loc]] = {}
    orphans: list[Loc] = []
    duplicates: list[tuple[Loc, Loc]] = []
    last_round_before: int | None = None

    def call_at(loc: Loc) -> ToolCall:
        b = messages[loc[0]].blocks[loc[1]]
        assert isinstance(b, ToolCall)
        return b

    for mi, msg in enumerate(messages):
        r = turn_at.get(mi)
        for bi, block in enumerate(msg.blocks):
            if isinstance(block, ToolCall) and r is not None:
                round_calls[r].append((mi, bi))
                if block.id is not None:
                    calls_by_id.setdefault(block.id, []).append((mi, bi))
            elif isinstance(block, ToolResult):
                loc = (mi, bi)
                pick: Loc | None = None
                dup_of: Loc | None = None
                cid = block.call_id
                by_id = calls_by_id.get(cid) if cid is not None else None
                if by_id:
                    # the latest turn with an unanswered call of this id, then its first such call
                    latest = next((c for c in reversed(by_id) if c not in answered), None)
                    if latest is None:
                        dup_of = by_id[-1]
                    else:
                        r_latest = turn_at[latest[0]]
                        pick = next(
                            c for c in by_id if c not in answered and turn_at[c[0]] == r_latest
                        )
                elif (cid is None or rules.ids_optional) and last_round_before is not None:
                    named = [
                        c
                        for c in round_calls[last_round_before]
                        if (block.name is None or call_at(c).name == block.name)
                        and (cid is None or call_at(c).id in (None, cid))
                    ]
                    pick = next((c for c in named if c not in answered), None)
                    if pick is None and named:
                        dup_of = named[-1]
                if pick is not None:
                    answered[pick] = loc
                    call_of[loc] = pick
                elif dup_of is not None:
                    duplicates.append((loc, dup_of))
                else:
                    orphans.append(loc)
        if r is not None and turns[r][1] == mi:
            last_round_before = r

    # A result standing before its call (possible only when misplaced): link it forward.
    still_orphan: list[Loc] = []
    server: list[Loc] = []
    for loc in orphans:
        res = messages[loc[0]].blocks[loc[1]]
        assert isinstance(res, ToolResult)
        later = [
            c
            for c in calls_by_id.get(res.call_id or "", [])
            if c[0] > loc[0] and c not in answered
        ]
        if later:
            answered[later[0]] = loc
            call_of[loc] = later[0]
        elif conv.server_state:
            server.append(loc)
        else:
            still_orphan.append(loc)

    rounds = tuple(
        Round(
            index=r,
            start=s,
            end=e,
            calls=tuple(round_calls[r]),
            results={c: answered[c] for c in round_calls[r] if c in answered},
        )
        for r, (s, e) in enumerate(turns)
    )
    return Pairing(
        rounds=rounds,
        call_of=call_of,
        round_of_message=turn_at,
        orphans=tuple(still_orphan),
        duplicates=tuple(duplicates),
        server_side=tuple(server),
    )


# --------------------------------------------------------------------------------------
# check


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


def _find(conv: Conversation) -> _Findings:
    from ctxwin.formats import get_adapter

    rules = get_adapter(conv.format).rules
    pairing = conv.pairing
    messages = conv.messages
    out = _Findings()

    def block(loc: Loc) -> Block:
        return messages[loc[0]].blocks[loc[1]]

    for rnd in pairing.rounds:
        seen_ids: dict[str, Loc] = {}
        for c in rnd.calls:
            call = block(c)
            assert isinstance(call, ToolCall)
            if call.id is not None:
                if call.id in seen_ids and (
                    rules.turn == "consecutive" or seen_ids[call.id][0] == c[0]
                ):
                    out.problems.append(("duplicate_call_id", c, call.id, call.name))
                    out.bad_rounds.add(rnd.index)
                seen_ids[call.id] = c
            res_loc = rnd.results.get(c)
            if res_loc is None:
                out.problems.append(("missing_result", c, call.id, call.name))
                out.bad_rounds.add(rnd.index)
            elif not _in_place(conv, rules, rnd, c, res_loc):
                out.problems.append(("misplaced_result", res_loc, call.id, call.name))
                out.bad_rounds.add(rnd.index)
        if rules.results_first and rnd.results and rnd.end + 1 < len(messages):
            carrier = messages[rnd.end + 1]
            seen_other = False
            for bi, b in enumerate(carrier.blocks):
                if isinstance(b, ToolResult):
                    if seen_other:
                        out.problems.append(("results_not_first", (rnd.end + 1, bi), b.call_id, b.name))
                        out.bad_rounds.add(rnd.index)
                        break
                else:
                    seen_other = True
    for loc in pairing.orphans:
        res = block(loc)
        assert isinstance(res, ToolResult)
        out.problems.append(("orphan_result", loc, res.call_id, res.name))
    for loc, dup_call in pairing.duplicates:
        res = block(loc)
        call = block(dup_call)
        assert isinstance(res, ToolResult) and isinstance(call, ToolCall)
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


# --------------------------------------------------------------------------------------
# repair


@dataclass(frozen=True, slots=True)
class Fix:
    """One change made by :func:`ctxwin.repair`, located in the request as it came in."""

    code: FixCode
    description: str
    message_index: int | None
    path: str
    call_id: str | None = None
    tool: str | None = None

    def __str__(self) -> str:
        cid = f" [{self.call_id}]" if self.call_id else ""
        return f"{self.path}: {self.code}{cid}: {self.description}"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message_index": self.message_index,
            "path": self.path,
            "call_id": self.call_id,
            "tool": self.tool,
            "description": self.description,
        }


def repair_conversation(
    conv: Conversation, *, normalize: bool = False
) -> tuple[Conversation, list[Fix]]:
    """Repair pairing minimally. Rounds the provider accepts are left exactly as they are.

    A round with a problem is rebuilt: its results are gathered (from wherever they stand)
    right after the turn, in the order of its calls, a synthetic error result standing in
    for each missing one; messages that stood between the turn and its results end up after
    them; an empty result in it gets an explicit ``(empty result)`` text. Orphan and
    duplicate results are dropped.

    ``normalize`` also rebuilds rounds the provider accepts as they are: results answered
    out of call order are put in order and every empty result gets the explicit text. Real
    traces have both and providers accept them, so this is off by default: rewriting them
    only changes the prompt's prefix and costs a cache miss.
    """
    from ctxwin.formats import get_adapter

    adapter = get_adapter(conv.format)
    rules = adapter.rules
    messages = conv.messages
    fixes: list[Fix] = []

    def where(loc: Loc) -> tuple[int | None, str]:
        m = messages[loc[0]]
        return m.index, adapter.block_path(m, loc[1])

    def fix(code: FixCode, loc: Loc, desc: str, call_id: str | None, tool: str | None) -> None:
        idx, path = where(loc)
        fixes.append(Fix(code, desc, idx, path, call_id, tool))

    # Duplicate call ids inside one turn make pairing ambiguous: give the later ones new ids
    # (and their results, which pair by position) before anything else.
    conv, renamed = _rename_duplicate_ids(conv, rules)
    for loc, old, new in renamed:
        fix("renamed_duplicate_call_id", loc, f"call id {old!r} repeated in one turn; now {new!r}", old, None)
    messages = conv.messages
    pairing = conv.pairing
    findings = _find(conv)
    bad = set(findings.bad_rounds)
    if normalize:
        for rnd in pairing.rounds:
            order = [rnd.results[c] for c in rnd.calls if c in rnd.results]
            if order != sorted(order) or any(
                _block_is_empty(messages[r[0]].blocks[r[1]]) for r in order
            ):
                bad.add(rnd.index)

    remove: set[Loc] = set()
    for loc in pairing.orphans:
        res = messages[loc[0]].blocks[loc[1]]
        assert isinstance(res, ToolResult)
        remove.add(loc)
        fix("dropped_orphan_result", loc, "result answers no call in the request; dropped", res.call_id, res.name)
    for loc, call_loc in pairing.duplicates:
        res = messages[loc[0]].blocks[loc[1]]
        call = messages[call_loc[0]].blocks[call_loc[1]]
        assert isinstance(res, ToolResult) and isinstance(call, ToolCall)
        remove.add(loc)
        fix("dropped_duplicate_result", loc, "a second result for a call already answered; dropped", res.call_id, call.name)

    # The carrier of each rebuilt round: results in call order, synthetic ones where missing.
    # A result that had a message to itself keeps that message (one-per-message formats).
    alone = {id(m.blocks[0]): m for m in messages if len(m.blocks) == 1}
    insert_after: dict[int, list[Message]] = {}
    reuse_carrier: dict[int, tuple[Block, ...]] = {}
    for rnd in pairing.rounds:
        if rnd.index not in bad:
            continue
        ordered: list[ToolResult] = []
        for c in rnd.calls:
            call = messages[c[0]].blocks[c[1]]
            assert isinstance(call, ToolCall)
            res_loc = rnd.results.get(c)
            if res_loc is None:
                ordered.append(_synthetic_result(call))
                fix("added_missing_result", c, f"no result for this call: added an error result ({MISSING_RESULT_TEXT!r})", call.id, call.name)
                continue
            res = messages[res_loc[0]].blocks[res_loc[1]]
            assert isinstance(res, ToolResult)
            ordered.append(res)
            remove.add(res_loc)
            if not _in_place(conv, rules, rnd, c, res_loc):
                fix("moved_result", res_loc, "moved to directly after its call's turn", call.id, call.name)
        in_order = [rnd.results[c] for c in rnd.calls if c in rnd.results]
        if in_order != sorted(in_order) and len(in_order) > 1:
            fix("reordered_results", rnd.results[rnd.calls[0]] if rnd.calls[0] in rnd.results else rnd.calls[0], "results of this turn put in the order of its calls", None, None)
        nxt = rnd.end + 1
        if (
            rules.carrier == "grouped"
            and nxt < len(messages)
            and messages[nxt].role == rules.carrier_role
            and any(loc[0] == nxt for loc in rnd.results.values())
        ):
            reuse_carrier[nxt] = tuple(ordered)
            carried = messages[nxt].blocks
            first_other = next(
                (bi for bi, b in enumerate(carried) if not isinstance(b, ToolResult)), None
            )
            if (
                rules.results_first
                and first_other is not None
                and any(isinstance(b, ToolResult) for b in carried[first_other:])
            ):
                fix(
                    "reordered_results",
                    (nxt, first_other),
                    "results put before the other blocks of their message",
                    None,
                    None,
                )
        elif rules.carrier == "grouped":
            insert_after[rnd.end] = [Message(role=rules.carrier_role, blocks=tuple(ordered))]
        else:
            insert_after[rnd.end] = [
                alone.get(id(r)) or Message(role=rules.carrier_role, blocks=(r,)) for r in ordered
            ]

    out: list[Message] = []
    for mi, msg in enumerate(messages):
        if mi in reuse_carrier:
            kept = tuple(
                b
                for bi, b in enumerate(msg.blocks)
                if not isinstance(b, ToolResult) or (mi, bi) not in remove
            )
            out.append(msg.with_blocks(reuse_carrier[mi] + kept))
        elif any(loc[0] == mi for loc in remove):
            kept = tuple(b for bi, b in enumerate(msg.blocks) if (mi, bi) not in remove)
            if kept and any(not isinstance(b, Text) or b.text for b in kept):
                out.append(msg.with_blocks(kept) if len(kept) != len(msg.blocks) else msg)
        else:
            out.append(msg)
        out.extend(insert_after.get(mi, ()))

    # Empty results of rebuilt rounds get an explicit text (all of them when normalizing).
    filled_ids = {id(r) for rs in [*reuse_carrier.values()] for r in rs}
    filled_ids.update(id(b) for ms in insert_after.values() for m in ms for b in m.blocks)
    final: list[Message] = []
    for msg in out:
        if any(
            isinstance(b, ToolResult) and b.is_empty and (normalize or id(b) in filled_ids)
            for b in msg.blocks
        ):
            blocks: list[Block] = []
            for bi, b in enumerate(msg.blocks):
                if isinstance(b, ToolResult) and b.is_empty and (normalize or id(b) in filled_ids):
                    fixes.append(
                        Fix(
                            "filled_empty_result",
                            f"empty result content replaced by {EMPTY_RESULT_TEXT!r}",
                            msg.index,
                            adapter.block_path(msg, bi),
                            b.call_id,
                            b.name,
                        )
                    )
                    b = b.with_text(EMPTY_RESULT_TEXT)
                blocks.append(b)
            msg = msg.with_blocks(tuple(blocks))
        final.append(msg)
    return conv.with_messages(tuple(final)), fixes


def _block_is_empty(b: Block) -> bool:
    return isinstance(b, ToolResult) and b.is_empty


def _synthetic_result(call: ToolCall) -> ToolResult:
    return ToolResult(
        call_id=call.id,
        content=(Text(MISSING_RESULT_TEXT),),
        is_error=True,
        name=call.name,
        kind=call.kind,
    )


def _rename_duplicate_ids(
    conv: Conversation, rules: PairingRules
) -> tuple[Conversation, list[tuple[Loc, str, str]]]:
    pairing = conv.pairing
    renames: dict[Loc, str] = {}
    taken = {c.id for _, c in conv.calls() if c.id is not None}
    renamed: list[tuple[Loc, str, str]] = []
    for rnd in pairing.rounds:
        seen: set[str] = set()
        for c in rnd.calls:
            call = conv.messages[c[0]].blocks[c[1]]
            assert isinstance(call, ToolCall)
            if call.id is None:
                continue
            if call.id in seen:
                n = 2
                while f"{call.id}_{n}" in taken:
                    n += 1
                new = f"{call.id}_{n}"
                taken.add(new)
                renames[c] = new
                renamed.append((c, call.id, new))
            seen.add(call.id)
    if not renames:
        return conv, []
    result_renames = {
        pairing.rounds[pairing.round_of_message[c[0]]].results[c]: new
        for c, new in renames.items()
        if c in pairing.rounds[pairing.round_of_message[c[0]]].results
    }
    messages = list(conv.messages)
    for (mi, bi), new in {**renames, **result_renames}.items():
        msg = messages[mi]
        b = msg.blocks[bi]
        if isinstance(b, ToolCall):
            nb: Block = _replace_id(b, new)
        else:
            assert isinstance(b, ToolResult)
            nb = _replace_result_id(b, new)
        blocks = list(msg.blocks)
        blocks[bi] = nb
        messages[mi] = msg.with_blocks(tuple(blocks))
    return conv.with_messages(tuple(messages)), renamed


def _replace_id(call: ToolCall, new: str) -> ToolCall:
    from dataclasses import replace

    return replace(call, id=new, pristine=False)


def _replace_result_id(res: ToolResult, new: str) -> ToolResult:
    from dataclasses import replace

    return replace(res, call_id=new, pristine=False)
