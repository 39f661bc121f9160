"""Repair: the smallest change that makes a request's pairing valid.

:func:`repair_conversation` is a plan of named phases over the neutral conversation:

0. ``drop_repeated_items``: an item whose id an earlier item has goes (the provider wants
   item ids unique: :mod:`ctxwin._core.renaming`);
   ``merge``: where the format wants calls made together in one message (Gemini),
   consecutive assistant messages with calls are merged (:mod:`ctxwin._core.renaming`);
1. ``rename``: duplicate call ids inside one turn (where the format wants them unique in
   the request, across turns too) get new ids of the same shape (their results follow:
   :mod:`ctxwin._core.renaming`);
2. ``drop_strays``: orphan and duplicate results are dropped, and so are blocks tied to a
   call the server runs that the request does not open (a server tool's result, a call a
   program made, with its results, and the reasoning items such a block came with that
   nothing staying needs: :mod:`ctxwin._core.leftovers`); a call's further results, where
   the format allows them (:attr:`~ctxwin._core.model.PairingRules.repeat_results`), are no
   duplicates: they stay where they are, after it; a reasoning item with no item of its
   turn after it that needs one goes too, or, where the model's items go on after messages
   of other roles, moves right before them (:func:`_unfollowed`);
3. ``choose``: the rounds to rebuild (those with a problem besides what ``drop_strays``
   took; with ``normalize`` also those with results out of call order or empty results);
4. ``rebuild``: each chosen round's results are gathered, in call order, right after its
   turn, a synthetic error result standing in for each missing one;
5. ``assemble``: the output messages, with what was removed, moved and inserted (an
   assistant message left with nothing but its thinking goes, unless the provider joins it
   to the assistant message after it);
6. ``first_user``: where the format wants a user message first, one goes first;
7. ``last_user``: a request that ended with another role's message than the model's still
   does: where what ended it was taken away (an orphan result) or moved up (a late result),
   a short user message goes last. A request ending with the model's message asks for its
   continuation (a prefill), which Claude models from 4.6 on refuse ("This model does not
   support assistant message prefill").
Rounds the provider accepts are left exactly as they are.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from ctxwin._core.check import (
    Describer,
    by_program,
    find,
    first_misplaced,
    has_errors,
    in_place,
)
from ctxwin._core.conversation import Conversation
from ctxwin._core.leftovers import bare_openers, unopened_drops
from ctxwin._core.model import (
    Block,
    Loc,
    Message,
    Text,
    ToolCall,
    ToolResult,
    call_at,
    result_at,
)
from ctxwin._core.pairing import Round
from ctxwin._core.records import Fix, FixCode
from ctxwin._core.renaming import (
    RepairMemo,
    drop_repeated_items,
    merge_split_turns,
    rename_duplicate_ids,
)
from ctxwin._core.repair_texts import RepairTexts

__all__ = ["RepairTexts", "repair_conversation"]


@dataclass
class _Plan:
    """What the phases decide, in the locations of ``conv`` (after renaming)."""

    conv: Conversation
    describer: Describer
    texts: RepairTexts
    normalize: bool
    fixes: list[Fix] = field(default_factory=list)
    fills: list[Fix] = field(default_factory=list)
    """Fixes of empty results filled; reported after the others."""
    remove: set[Loc] = field(default_factory=set)
    insert_after: dict[int, list[Message]] = field(default_factory=dict)
    """Messages to insert after a message position: a rebuilt round's new carriers."""
    reuse_carrier: dict[int, tuple[Block, ...]] = field(default_factory=dict)
    """Grouped formats: the message right after a rebuilt turn carries its results first."""
    insert_before: dict[int, list[Message]] = field(default_factory=dict)
    """Messages to insert before a message position: reasoning moved to its turn's item."""

    def fix(self, code: FixCode, loc: Loc, desc: str, call_id: str | None, tool: str | None) -> Fix:
        msg = self.conv.messages[loc[0]]
        done = Fix(code, desc, msg.index, self.describer.block_path(msg, loc[1]), call_id, tool)
        self.fixes.append(done)
        return done


def repair_conversation(
    conv: Conversation,
    describer: Describer,
    *,
    normalize: bool = False,
    texts: RepairTexts | None = None,
    memo: RepairMemo | None = None,
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
    only changes the prompt's prefix and costs a cache miss. What a drop or a move brings
    together is normalized too: a result taken from between two runs of calls makes them
    one turn, whose results are then put in order (a second repair changes nothing).

    ``memo`` (the engine's) keeps the messages renaming makes, so that they are the same
    objects at every request, and the pairing of them, resumed where the previous request
    left it (:class:`~ctxwin._core.renaming.RepairMemo`).
    """
    texts = texts or RepairTexts()
    fixed, fixes, moved = _repair_pass(conv, describer, normalize, texts, memo)
    # the turns a move joined: in their own order (normalize), their call ids made unique
    # (a stray result between two turns calling call_0 each made them one turn with two)
    while moved and (normalize or has_errors(fixed)):
        fixed, more, moved = _repair_pass(fixed, describer, normalize, texts, memo)
        fixes += more
    return fixed, fixes


def _repair_pass(
    conv: Conversation,
    describer: Describer,
    normalize: bool,
    texts: RepairTexts,
    memo: RepairMemo | None = None,
) -> tuple[Conversation, list[Fix], bool]:
    """One pass of the phases; and whether it moved or removed anything (which may join
    turns: only ``normalize`` has more to do then)."""
    kept, item_fixes = drop_repeated_items(conv, describer)
    merged, merge_fixes = merge_split_turns(kept, describer, memo)
    renamed, rename_fixes = rename_duplicate_ids(merged, describer, memo)
    if memo is not None and renamed is not conv:  # renamed messages: the same at every request
        memo.link(renamed)
    fixes = item_fixes + merge_fixes + rename_fixes
    plan = _Plan(renamed, describer, texts, normalize, fixes=fixes)
    _drop_strays(plan)
    rebuild = _choose(plan)
    for rnd in renamed.pairing.rounds:
        if rnd.index in rebuild:
            _rebuild(plan, rnd)
    messages = _last_user(plan, _first_user(plan, _assemble(plan)), conv.messages)
    moved = bool(plan.remove or plan.insert_after or plan.reuse_carrier or plan.insert_before)
    moved = moved or kept is not conv
    old = renamed.messages
    same = len(messages) == len(old) and all(map(operator.is_, messages, old))
    fixed = renamed if same else renamed.with_messages(messages)  # same: its pairing kept
    return fixed, plan.fixes + plan.fills, moved


# ------------------------------------------------------------------------------ phases


def _choose(plan: _Plan) -> set[int]:
    """The rounds to rebuild: with a problem, or (``normalize``) out of order or empty; a
    problem of a call or result :func:`_drop_strays` took does not count."""
    conv = plan.conv
    gone = plan.remove
    rebuild = set(find(conv, warnings=False, gone=gone).bad_rounds)
    if plan.normalize:
        for rnd in conv.pairing.rounds:
            order = [rnd.results[c] for c in rnd.calls if c in rnd.results and c not in gone]
            if order != sorted(order) or any(result_at(conv.messages, r).is_empty for r in order):
                rebuild.add(rnd.index)
    return rebuild


def _drop_strays(plan: _Plan) -> None:
    """Orphan results (answering no call) and second results for a call of a kind the format
    answers once are dropped, and so is a block tied to a call the server runs whose opening
    block the request does not hold (without server state: the provider refuses it): a
    server tool's result or call, an item a program made, and a call a program made with
    its results (and the reasoning items
    the dropped block came with, unless an item of their turn that stays needs them:
    :func:`~ctxwin._core.leftovers.unopened_drops`). A program's calls are
    not the model's own (Anthropic: their results go to the program, not into Claude's
    context): without the program they go; made direct, they would be calls the model never
    made, of tools that may only be called from code. A reasoning item that needs an item of
    its turn after it and has none is dropped or moved (:func:`_unfollowed`)."""
    messages = plan.conv.messages
    pairing = plan.conv.pairing
    drops = unopened_drops(plan.conv)  # reasoning that would move before one of them goes
    resumed = {loc: at for loc, at in pairing.resumed if at not in {d.loc[0] for d in drops}}
    for drop in drops:
        if drop.loc in resumed:  # an item of its turn after needs it: it moves there
            continue
        plan.remove.add(drop.loc)
        plan.fix("dropped_orphan_result", drop.loc, drop.description, drop.call_id, drop.tool)
    if plan.remove:
        _drop_further(plan)
    rules = plan.conv.rules
    kinds = _call_kinds(plan.conv) if pairing.orphans and rules.answers is not None else {}
    for loc in pairing.orphans:
        res = result_at(messages, loc)
        plan.remove.add(loc)
        other = [k for k in kinds.get(res.call_id or "", ()) if not rules.kind_answers(res.kind, k)]
        why = f"{res.kind} result answers no call: its id is a {other[0]} call's" if other else ""
        desc = f"{why or 'result answers no call in the request'}; dropped"
        plan.fix("dropped_orphan_result", loc, desc, res.call_id, res.name)
    for loc, call_loc in pairing.duplicates:
        res = result_at(messages, loc)
        plan.remove.add(loc)
        plan.fix(
            "dropped_duplicate_result",
            loc,
            "a second result for a call already answered; dropped",
            res.call_id,
            call_at(messages, call_loc).name,
        )
    _unfollowed(plan)


def _unfollowed(plan: _Plan) -> None:
    """A reasoning item with no item of its turn right after it once the strays are gone
    (:attr:`~ctxwin._core.pairing.Pairing.unfollowed`) is refused ("Item 'rs_...' of type
    'reasoning' was provided without its required following item"): it goes, unless the
    model's items go on after a message of another role inserted into the turn and the
    first needs its reasoning ("Item 'fc_...' of type 'function_call' was provided without
    its required 'reasoning' item"), where it moves right before that item (the two pair
    only when adjacent; dropped or left, the call is refused): the inserted message then
    reads before the turn. Where that item goes too, the reasoning goes."""
    messages = plan.conv.messages
    resumed = dict(plan.conv.pairing.resumed)
    for loc in plan.conv.pairing.unfollowed:
        if loc in plan.remove:  # already gone with the block it came with
            continue
        plan.remove.add(loc)
        at = resumed.get(loc)
        if at is None or any(r[0] == at for r in plan.remove):
            desc = "reasoning with no item of its turn after it (the provider refuses it); dropped"
            plan.fix("dropped_orphan_result", loc, desc, None, None)
            continue
        plan.insert_before.setdefault(at, []).append(messages[loc[0]])
        item = plan.describer.block_path(messages[at], 0)
        desc = f"reasoning cut off from its turn's next item ({item}); moved right before it"
        plan.fix("moved_result", loc, desc, None, None)


def _drop_further(plan: _Plan) -> None:
    """The further results of a call that goes (:attr:`~ctxwin._core.pairing.Round.more`)
    go with it: left, they would answer nothing."""
    pairing = plan.conv.pairing
    for rnd in pairing.rounds:
        for loc in rnd.more:
            call_loc = pairing.call_of[loc]
            if call_loc in plan.remove and loc not in plan.remove:
                plan.remove.add(loc)
                call = call_at(plan.conv.messages, call_loc)
                desc = "a further result of a call that is dropped; dropped"
                plan.fix("dropped_orphan_result", loc, desc, call.id, call.name)


def _call_kinds(conv: Conversation) -> dict[str, list[str]]:
    """call id -> the kinds of the calls with that id."""
    kinds: dict[str, list[str]] = {}
    for _, call in conv.calls():
        if call.id is not None:
            kinds.setdefault(call.id, []).append(call.kind)
    return kinds


def _rebuild(plan: _Plan, rnd: Round) -> None:
    """One round's results, in call order, where the format wants them."""
    conv = plan.conv
    messages = conv.messages
    rules = conv.rules
    gone = plan.remove  # a program's call may have gone, or its program answered it
    calls = [c for c in rnd.calls if c not in gone and not by_program(conv, rnd, c)]
    if not calls:
        return
    ordered: list[tuple[ToolResult, Loc | None]] = []
    for c in calls:
        call = call_at(messages, c)
        res_loc = rnd.results.get(c)
        if res_loc is None:
            ordered.append((_synthetic_result(call, plan.texts), None))
            plan.fix(
                "added_missing_result",
                c,
                f"no result for this call: added an error result ({plan.texts.missing(call)!r})",
                call.id,
                call.name,
            )
            continue
        ordered.append((_filled(plan, res_loc), res_loc))
        plan.remove.add(res_loc)
        if not in_place(conv, rnd, c, res_loc):
            plan.fix(
                "moved_result",
                res_loc,
                "moved to directly after its call's turn",
                call.id,
                call.name,
            )
    in_order = [rnd.results[c] for c in calls if c in rnd.results]
    if in_order != sorted(in_order) and len(in_order) > 1:
        first = rnd.results.get(calls[0], calls[0])
        plan.fix(
            "reordered_results",
            first,
            "results of this turn put in the order of its calls",
            None,
            None,
        )
    results = tuple(r for r, _ in ordered)
    nxt = rnd.end + 1
    if (
        rules.carrier == "grouped"
        and nxt < len(messages)
        and messages[nxt].role == rules.carrier_role
        and any(loc[0] == nxt for loc in rnd.results.values())
    ):
        plan.reuse_carrier[nxt] = results
        _note_results_first(plan, nxt)
    elif rules.carrier == "grouped":
        plan.insert_after[rnd.end] = [Message(role=rules.carrier_role, blocks=results)]
    else:
        # A result that had a message to itself keeps that message (one per message).
        plan.insert_after[rnd.end] = [_carrier_of(plan, res, loc) for res, loc in ordered]


def _assemble(plan: _Plan) -> tuple[Message, ...]:
    """The output: removals applied, reused carriers filled, new carriers inserted; an
    assistant message left with only its thinking goes (:func:`_bare_openers`)."""
    out: list[Message] = []
    trimmed: dict[int, int] = {}  # output position -> message position, of trimmed messages
    removed_in = {loc[0] for loc in plan.remove}
    for mi, msg in enumerate(plan.conv.messages):
        out.extend(plan.insert_before.get(mi, ()))
        if mi in plan.reuse_carrier:
            kept = _kept_blocks(plan, mi, msg)
            out.append(msg.with_blocks(plan.reuse_carrier[mi] + kept))
        elif mi in removed_in:
            kept = _kept_blocks(plan, mi, msg)
            if any(not isinstance(b, Text) or b.text for b in kept):
                trimmed[len(out)] = mi
                out.append(msg.with_blocks(kept) if len(kept) != len(msg.blocks) else msg)
        else:
            out.append(_fill_all(plan, mi, msg) if plan.normalize else msg)
        out.extend(plan.insert_after.get(mi, ()))
    return _bare_openers(plan, out, trimmed)


def _bare_openers(plan: _Plan, out: list[Message], trimmed: dict[int, int]) -> tuple[Message, ...]:
    """An assistant message repair left with nothing but its thinking goes with it, unless
    the API joins it to the assistant message after it (:func:`bare_openers`)."""
    bare = bare_openers(out, trimmed, plan.conv.rules)
    for at in bare:
        mi = trimmed[at]
        bi = next(
            bi for bi, b in enumerate(plan.conv.messages[mi].blocks) if (mi, bi) not in plan.remove
        )
        desc = "thinking left alone in its message by the drops before; dropped with its message"
        plan.fix("dropped_orphan_result", (mi, bi), desc, None, None)
    if not bare:
        return tuple(out)
    gone = set(bare)
    return tuple(m for at, m in enumerate(out) if at not in gone)


def _first_user(plan: _Plan, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Where the format wants a user message first and the repaired conversation starts
    with another role (results moved away from a first user message, or a history cut
    before its first user turn), a short user message goes first."""
    check = plan.conv.with_messages(messages)
    at = first_misplaced(check)
    if at is None:
        return messages
    first = Message("user", (Text(plan.texts.first_user),))
    msg = messages[at]
    plan.fixes.append(
        Fix(
            "added_first_user_message",
            f"the request must start with a user message: added {plan.texts.first_user!r}",
            msg.index,
            plan.describer.block_path(msg, 0) if msg.blocks else f"[{msg.index}]",
        )
    )
    return (*messages[:at], first, *messages[at:])


def _last_user(
    plan: _Plan, messages: tuple[Message, ...], given: tuple[Message, ...]
) -> tuple[Message, ...]:
    """Where the request ended (``given``: as this pass got it) with another role's message
    than the model's and the repaired one ends with the model's (what ended it was taken
    away or moved up), a short user message goes last: the request still asks for the
    model's next turn."""
    if not given or not messages or given[-1].role == "assistant":
        return messages
    if messages[-1].role != "assistant":
        return messages
    last = given[-1]
    plan.fixes.append(
        Fix(
            "added_last_user_message",
            "the request must end with a message of another role than the model's, as it did: "
            f"added {plan.texts.last_user!r}",
            last.index,
            plan.describer.block_path(last, 0) if last.blocks else f"[{last.index}]",
        )
    )
    return (*messages, Message("user", (Text(plan.texts.last_user),)))


# ------------------------------------------------------------------------------ helpers


def _kept_blocks(plan: _Plan, mi: int, msg: Message) -> tuple[Block, ...]:
    return tuple(b for bi, b in enumerate(msg.blocks) if (mi, bi) not in plan.remove)


def _note_results_first(plan: _Plan, mi: int) -> None:
    """A reused carrier with results after other blocks: they are put first (Anthropic)."""
    if not plan.conv.rules.results_first:
        return
    carried = plan.conv.messages[mi].blocks
    first_other = next((bi for bi, b in enumerate(carried) if not isinstance(b, ToolResult)), None)
    if first_other is not None and any(isinstance(b, ToolResult) for b in carried[first_other:]):
        plan.fix(
            "reordered_results",
            (mi, first_other),
            "results put before the other blocks of their message",
            None,
            None,
        )


def _carrier_of(plan: _Plan, res: ToolResult, loc: Loc | None) -> Message:
    """The message carrying one result: its own message when it stood alone in one."""
    rules = plan.conv.rules
    if loc is not None:
        msg = plan.conv.messages[loc[0]]
        if len(msg.blocks) == 1 and msg.blocks[0] is res:
            return msg
        if len(msg.blocks) == 1:  # alone, and filled: the same message with the new text
            return msg.with_blocks((res,))
    return Message(role=rules.carrier_role, blocks=(res,))


def _filled(plan: _Plan, loc: Loc) -> ToolResult:
    """The result at ``loc``, an empty one given its explicit text (a fix recorded)."""
    res = result_at(plan.conv.messages, loc)
    if not res.is_empty:
        return res
    msg = plan.conv.messages[loc[0]]
    call = plan.conv.call_of(loc)
    plan.fills.append(
        Fix(
            "filled_empty_result",
            f"empty result content replaced by {plan.texts.empty_result!r}",
            msg.index,
            plan.describer.block_path(msg, loc[1]),
            res.call_id,
            call.name if call is not None else res.name,
        )
    )
    return res.with_text(plan.texts.empty_result)


def _fill_all(plan: _Plan, mi: int, msg: Message) -> Message:
    """With ``normalize``, the empty results of a message not rebuilt (calls on the server)."""
    if not any(isinstance(b, ToolResult) and b.is_empty for b in msg.blocks):
        return msg
    blocks = tuple(
        _filled(plan, (mi, bi)) if isinstance(b, ToolResult) else b
        for bi, b in enumerate(msg.blocks)
    )
    return msg.with_blocks(blocks)


def _synthetic_result(call: ToolCall, texts: RepairTexts) -> ToolResult:
    return ToolResult(
        call_id=call.id,
        content=(Text(texts.missing(call)),),
        is_error=True,
        name=call.name,
        kind=call.kind,
    )
