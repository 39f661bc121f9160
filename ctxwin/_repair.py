"""Repair: the smallest change that makes a request's pairing valid."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxwin._model import Block, Conversation, Loc, Message, Text, ToolCall, ToolResult
from ctxwin._pairing import (
    EMPTY_RESULT_TEXT,
    MISSING_RESULT_TEXT,
    FixCode,
    PairingRules,
)
from ctxwin._problems import _find, _in_place


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
        fix(
            "renamed_duplicate_call_id",
            loc,
            f"call id {old!r} repeated in one turn; now {new!r}",
            old,
            None,
        )
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
        fix(
            "dropped_orphan_result",
            loc,
            "result answers no call in the request; dropped",
            res.call_id,
            res.name,
        )
    for loc, call_loc in pairing.duplicates:
        res = messages[loc[0]].blocks[loc[1]]
        call = messages[call_loc[0]].blocks[call_loc[1]]
        assert isinstance(res, ToolResult)
        assert isinstance(call, ToolCall)
        remove.add(loc)
        fix(
            "dropped_duplicate_result",
            loc,
            "a second result for a call already answered; dropped",
            res.call_id,
            call.name,
        )

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
                fix(
                    "added_missing_result",
                    c,
                    f"no result for this call: added an error result ({MISSING_RESULT_TEXT!r})",
                    call.id,
                    call.name,
                )
                continue
            res = messages[res_loc[0]].blocks[res_loc[1]]
            assert isinstance(res, ToolResult)
            ordered.append(res)
            remove.add(res_loc)
            if not _in_place(conv, rules, rnd, c, res_loc):
                fix(
                    "moved_result",
                    res_loc,
                    "moved to directly after its call's turn",
                    call.id,
                    call.name,
                )
        in_order = [rnd.results[c] for c in rnd.calls if c in rnd.results]
        if in_order != sorted(in_order) and len(in_order) > 1:
            fix(
                "reordered_results",
                rnd.results[rnd.calls[0]] if rnd.calls[0] in rnd.results else rnd.calls[0],
                "results of this turn put in the order of its calls",
                None,
                None,
            )
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
    return replace(call, id=new, pristine=False)


def _replace_result_id(res: ToolResult, new: str) -> ToolResult:
    return replace(res, call_id=new, pristine=False)
