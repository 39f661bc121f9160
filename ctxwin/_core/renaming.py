"""Repair's first phases, over the messages as they stand: an item whose id an earlier item
has dropped (:func:`drop_repeated_items`), calls split across assistant messages merged
where the format wants them in one (:func:`merge_split_turns`), and repeated call ids
renamed. Call ids repeated inside one turn make pairing ambiguous (a result answers the
first unanswered call with its id), so the later calls get new ids of the same shape, and
their results follow them. Where the format wants call ids unique in the whole request
(:attr:`~ctxwin._core.model.PairingRules.unique_ids`), a call whose id an earlier turn's
call has is renamed the same way: pairing put its results with it by position, so renaming
them together keeps each result with its call."""

from __future__ import annotations

import hashlib
import operator
import re
import string
from dataclasses import dataclass, field, replace

from ctxwin._core.check import Describer
from ctxwin._core.conversation import Conversation, linked
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import (
    Loc,
    Message,
    ToolCall,
    ToolResult,
    call_at,
    is_reasoning_item,
)
from ctxwin._core.pairing import Linker
from ctxwin._core.records import Fix, FixCode

__all__ = ["RepairMemo", "drop_repeated_items", "merge_split_turns", "rename_duplicate_ids"]


@dataclass
class RepairMemo:
    """What repair keeps from one request to the next (the engine's): the messages renaming
    made, by the message and its new ids, and the pairing of the renamed messages, resumed
    where the previous request's left off. An agent whose every turn repeats ``call_0``
    (renamed at every request) costs its new messages only."""

    renamed: Memo = field(default_factory=Memo)
    links: PrefixCache[Linker] = field(default_factory=PrefixCache)

    def link(self, conv: Conversation) -> None:
        """Set ``conv``'s pairing, resumed from a linker that saw a prefix of it."""
        linked(conv, self.links, (conv.rules, conv.server_state))


def drop_repeated_items(conv: Conversation, describer: Describer) -> tuple[Conversation, list[Fix]]:
    """Items whose id (:attr:`~ctxwin._core.model.Message.item_id`) an earlier item has:
    the provider refuses an id twice ("Duplicate item found with id rs_..."). The same item
    again (a client that appended a response's output twice) goes, the first staying where
    it is; what answered a call that went with it is then a duplicate or an orphan, dropped
    as one. Another item under the same id (a client that writes one made-up id on several
    messages) keeps its content and loses the id, which a call, an output and a message may
    go without; a reasoning item cannot, and goes."""
    repeated = conv.pairing.repeated_items
    if not repeated:
        return conv, []
    messages = list(conv.messages)
    first: dict[str, Message] = {}
    for msg in messages:
        if msg.item_id is not None:
            first.setdefault(msg.item_id, msg)
    fixes = []
    gone = set()
    for mi in repeated:
        msg = messages[mi]
        assert msg.item_id is not None
        was = first[msg.item_id]
        same = msg.raw == was.raw or is_reasoning_item(msg)
        code: FixCode = "dropped_duplicate_item" if same else "removed_duplicate_item_id"
        what = "the later item dropped" if same else "its id removed, its content kept"
        call_id, tool = _named(conv, msg)
        where = describer.block_path(was, 0)
        desc = f"item id {msg.item_id!r} repeated (first at {where}): {what}"
        fixes.append(Fix(code, desc, msg.index, describer.block_path(msg, 0), call_id, tool))
        if same:
            gone.add(mi)
        else:
            messages[mi] = _without_id(msg)
    kept = tuple(m for i, m in enumerate(messages) if i not in gone)
    return conv.with_messages(kept), fixes


def _without_id(msg: Message) -> Message:
    """``msg`` without its item id (its adapter writes it without one), nothing then tying it
    to a reasoning item before it."""
    blocks = tuple(
        replace(b, tied_reasoning=False) if isinstance(b, ToolCall) and b.tied_reasoning else b
        for b in msg.blocks
    )
    return replace(msg, blocks=blocks, pristine=False, item_id=None, tied_reasoning=False)


def _named(conv: Conversation, msg: Message) -> tuple[str | None, str | None]:
    """The call id and tool an item names: a call's own, an output's call's (found by its
    id, the output being a repeated one, which pairing does not link)."""
    block = msg.blocks[0] if msg.blocks else None
    if isinstance(block, ToolCall):
        return block.id, block.name
    if not isinstance(block, ToolResult):
        return None, None
    calls = (b for m in conv.messages for b in m.blocks if isinstance(b, ToolCall))
    call = next((c for c in calls if block.call_id is not None and c.id == block.call_id), None)
    return block.call_id, call.name if call is not None else block.name


def merge_split_turns(
    conv: Conversation, describer: Describer, memo: RepairMemo | None = None
) -> tuple[Conversation, list[Fix]]:
    """Where the format says so (:attr:`~ctxwin._core.model.PairingRules.merge_split_turns`),
    an assistant message with calls right after another with calls joins it: parallel calls
    split across messages stand together again, in their order (not reordered to put a
    signed call first: the order they were made in cannot be told, and calls without ids
    pair with their results by order), with their results after them. ``memo``:
    the same merged message for the same messages at every request."""
    if not conv.rules.merge_split_turns:
        return conv, []
    out: list[Message] = []
    runs: list[list[Message]] = []  # the messages each of ``out`` stands for
    fixes: list[Fix] = []
    for msg in conv.messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and msg.role == prev.role == "assistant"
            and msg.tool_calls
            and prev.tool_calls
        ):
            out[-1] = prev.with_blocks(prev.blocks + msg.blocks)
            runs[-1].append(msg)
            at, first = next((bi, b) for bi, b in enumerate(msg.blocks) if isinstance(b, ToolCall))
            fixes.append(
                Fix(
                    "merged_split_turn",
                    "calls made together but split across assistant messages: merged into "
                    "the message before",
                    msg.index,
                    describer.block_path(msg, at),
                    first.id,
                    first.name,
                )
            )
        else:
            out.append(msg)
            runs.append([msg])
    if not fixes:
        return conv, []
    if memo is not None:
        out = [
            _merged(run, merged, memo.renamed) if len(run) > 1 else merged
            for run, merged in zip(runs, out, strict=True)
        ]
    return conv.with_messages(tuple(out)), fixes


def _merged(run: list[Message], merged: Message, memo: Memo) -> Message:
    """The message ``run`` merged into, the same object as at the requests before."""
    key = tuple(map(id, run))
    salt = hash(key)
    hit = memo.get(run[0], salt)
    if isinstance(hit, tuple) and len(hit[0]) == len(run) and all(map(operator.is_, hit[0], run)):
        return hit[1]  # type: ignore[no-any-return]
    memo.put(run[0], (tuple(run), merged), salt)
    return merged


_NINE_ALNUM = re.compile(r"[A-Za-z0-9]{9}")
_ALNUM = string.ascii_letters + string.digits


def rename_duplicate_ids(
    conv: Conversation, describer: Describer, memo: RepairMemo | None = None
) -> tuple[Conversation, list[Fix]]:
    """Duplicate call ids inside one turn make pairing ambiguous: the later ones get new
    ids (and so do their results, which pair by position, further results included); so do
    calls whose id an earlier turn's call has, where ids are to be unique in the request.

    ``memo`` keeps each renamed message by the message it renames and its new ids, so that
    a growing history renamed at every request keeps the very same message objects, and
    the memos of the steps after repair (kept by identity) go on from them."""
    renamed = memo.renamed if memo is not None else None
    pairing = conv.pairing
    taken = {c.id for _, c in conv.calls() if c.id is not None}
    taken.update(r.result.call_id for r in conv.results() if r.result.call_id is not None)
    earlier: set[str] | None = set() if conv.rules.unique_ids else None
    renames: dict[Loc, str] = {}
    tried: dict[str, int] = {}
    fixes: list[Fix] = []
    for rnd in pairing.rounds:
        seen: set[str] = set()
        for c in rnd.calls:
            call = call_at(conv.messages, c)
            if call.id is None:
                continue
            if call.id in seen or (earlier is not None and call.id in earlier):
                why = (
                    "repeated in one turn"
                    if call.id in seen
                    else "used by an earlier turn's call (ids must be unique in the request)"
                )
                new = _new_id(call.id, taken, tried)
                taken.add(new)
                renames[c] = new
                if c in rnd.results:
                    renames[rnd.results[c]] = new
                for loc in rnd.more:
                    if pairing.call_of.get(loc) == c:
                        renames[loc] = new
                msg = conv.messages[c[0]]
                fixes.append(
                    Fix(
                        "renamed_duplicate_call_id",
                        f"call id {call.id!r} {why}; now {new!r}",
                        msg.index,
                        describer.block_path(msg, c[1]),
                        call.id,
                        call.name,
                    )
                )
            seen.add(call.id)
        if earlier is not None:
            earlier |= seen
    if not renames:
        return conv, []
    by_message: dict[int, list[tuple[int, str]]] = {}
    for (mi, bi), new in renames.items():
        by_message.setdefault(mi, []).append((bi, new))
    messages = list(conv.messages)
    for mi, ids in by_message.items():
        messages[mi] = _renamed(messages[mi], tuple(ids), renamed)
    return conv.with_messages(tuple(messages)), fixes


def _renamed(msg: Message, ids: tuple[tuple[int, str], ...], memo: Memo | None) -> Message:
    """``msg`` with the call or result at each block position of ``ids`` given its new id
    (the same object for the same message and ids again, from ``memo``)."""
    salt = hash(ids)
    hit = memo.get(msg, salt) if memo is not None else None
    if isinstance(hit, tuple) and hit[0] == ids:
        return hit[1]  # type: ignore[no-any-return]
    blocks = list(msg.blocks)
    for bi, new in ids:
        b = blocks[bi]
        if isinstance(b, ToolCall):
            blocks[bi] = replace(b, id=new, pristine=False)
        elif isinstance(b, ToolResult):
            blocks[bi] = replace(b, call_id=new, pristine=False)
    out = msg.with_blocks(tuple(blocks))
    if memo is not None:
        memo.put(msg, (ids, out), salt)
    return out


def _new_id(old: str, taken: set[str], tried: dict[str, int]) -> str:
    """An id for a repeated ``old`` that no call or result of the request has: ``old_2``
    (``_3``...), or, for an id of 9 letters and digits (Mistral's shape: its API refuses
    any other), 9 others derived from it (the same at every request). ``tried``: where the
    search for each ``old`` goes on (``taken`` only grows: what was taken stays taken), so
    an agent calling ``call_0`` every turn costs one look a rename, not one per turn."""
    mistral = _NINE_ALNUM.fullmatch(old) is not None
    n = tried.get(old, 0 if mistral else 2)
    while True:
        if mistral:
            digest = hashlib.sha256(f"{old}/{n}".encode()).digest()
            value = int.from_bytes(digest[:8], "big")
            new = "".join(_ALNUM[value // 62**k % 62] for k in range(9))
        else:
            new = f"{old}_{n}"
        n += 1
        if new not in taken:
            tried[old] = n
            return new
