"""What a repair drops with a block tied to a server's call the request does not open
(:func:`unopened_drops`), and what such drops leave that cannot stand alone: reasoning that
came with a dropped block, which goes with it unless a block of its turn that stays needs it.

- OpenAI Responses: reasoning items come before the items of their model turn. One with
  nothing of its turn after it is refused ("Item 'rs_...' of type 'reasoning' was provided
  without its required following item"; the OpenAI Agents SDK's drop_orphan_function_calls
  drops it with the call after it), and so is an item with an id sent without its reasoning
  ("Item 'fc_...' of type 'function_call' was provided without its required 'reasoning'
  item: 'rs_...'", mastra-ai/mastra#8738; a ``msg_...`` message too, continuedev/continue
  #12018). :func:`orphaned_reasoning` says which reasoning items go with dropped items; a
  request that comes with such reasoning (an item id, none of its turn's items after it)
  is checked and repaired as :attr:`~ctxwin._core.pairing.Pairing.unfollowed` says.
- Anthropic: thinking blocks open the assistant message of their turn. A message left with
  nothing but thinking is refused at the end of a request ("The final block in an assistant
  message cannot be `thinking`", tailcallhq/forgecode#2107); followed by another assistant
  message, the API joins the two into one turn ("Consecutive `user` or `assistant` turns in
  your request will be combined into a single turn"), which the thinking opens as the
  provider requires ("a final `assistant` message must start with a thinking block").
  :func:`bare_openers` says which such messages go.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxwin._core.check import unopened
from ctxwin._core.conversation import Conversation
from ctxwin._core.model import (
    Block,
    Loc,
    Message,
    Opaque,
    PairingRules,
    Text,
    ToolCall,
    is_reasoning_item,
    opens_turn,
)

__all__ = ["Drop", "bare_openers", "orphaned_reasoning", "unopened_drops"]


@dataclass(frozen=True, slots=True)
class Drop:
    """A block a repair drops, with what it says of it."""

    loc: Loc
    description: str
    call_id: str | None
    tool: str | None


def unopened_drops(conv: Conversation) -> list[Drop]:
    """The blocks tied to a call the server runs that the request does not open
    (:func:`~ctxwin._core.check.unopened`), with what goes with them: a call a program made
    takes its result, and a dropped item the reasoning items it came with
    (:func:`orphaned_reasoning`)."""
    messages = conv.messages
    pairing = conv.pairing
    out: list[Drop] = []
    dropped: dict[int, tuple[str, Drop]] = {}  # message -> what went first in it
    for found in unopened(conv):
        block = messages[found.loc[0]].blocks[found.loc[1]]
        if isinstance(block, ToolCall):
            what = f"a call made by a program that is not in the request ({block.tie})"
            first = Drop(found.loc, f"{what}; dropped", block.id, block.name)
            r = pairing.round_of_message.get(found.loc[0])
            res = pairing.rounds[r].results.get(found.loc) if r is not None else None
            out.append(first)
            if res is not None:
                out.append(Drop(res, f"the result of {what}; dropped", block.id, block.name))
        else:
            what = _what(block)
            first = Drop(found.loc, f"{what}; dropped", found.call_id, None)
            out.append(first)
        dropped.setdefault(found.loc[0], (what, first))
    gone = {d.loc for d in out}
    for k, mi in orphaned_reasoning(conv, gone, dropped).items():
        what, first = dropped[mi]
        out.append(Drop((k, 0), f"the reasoning of {what}; dropped", first.call_id, first.tool))
    return out


def _what(block: Block) -> str:
    """What a block tied to a server's call that the request does not open is."""
    if isinstance(block, Opaque) and block.opens is not None:
        return "a server tool's call made by a program that is not in the request"
    if isinstance(block, Opaque) and not block.closes:
        return f"an item made by a program that is not in the request ({block.tie})"
    return "a server tool's result whose call is not in the request"


def orphaned_reasoning(
    conv: Conversation, remove: Collection[Loc], dropped: Iterable[int]
) -> dict[int, int]:
    """The reasoning items that go with the ``dropped`` messages (all their blocks are in
    ``remove``), each mapped to the dropped message it came with: those right before a
    dropped message, unless a message of their turn after it that stays is tied to them
    (:attr:`~ctxwin._core.model.Message.tied_reasoning`, a call's
    :attr:`~ctxwin._core.model.ToolCall.tied_reasoning`). Kept, they are followed by an item
    of their turn; gone, no item that needs them is left without them.

    A turn's items run until the next reasoning item or the next message that is not the
    model's (an output between a call and a later one of the same turn separates them from
    their reasoning: the API refuses the later one), a stray repair takes away aside (see
    :func:`_needed_after`)."""
    messages = conv.messages
    pairing = conv.pairing
    strays = {r for r, _ in pairing.duplicates}
    if not conv.server_state:
        strays.update(pairing.orphans, pairing.unopened)
    out: dict[int, int] = {}
    for mi in sorted(set(dropped)):
        if not _gone(messages[mi], mi, remove):
            continue
        run: list[int] = []
        k = mi - 1
        while k >= 0 and is_reasoning_item(messages[k]) and (k, 0) not in remove:
            run.append(k)
            k -= 1
        if run and not _needed_after(messages, mi, remove, strays):
            out.update((k, mi) for k in run if k not in out)
    return out


def _gone(msg: Message, mi: int, remove: Collection[Loc]) -> bool:
    return all((mi, bi) in remove for bi in range(len(msg.blocks)))


def _needed_after(
    messages: Sequence[Message], mi: int, remove: Collection[Loc], strays: Collection[Loc]
) -> bool:
    """Whether a message of the turn of message ``mi``, after it, stays and is tied to the
    reasoning before it. Another role's message ends the turn, but not one whose every
    block is a stray repair takes away (``strays``: a result answering no call or one
    already answered, an unopened block), as :attr:`~ctxwin._core.pairing.Pairing.unfollowed`
    judges it: the results of a call ``remove`` drops did end it."""
    for j in range(mi + 1, len(messages)):
        msg = messages[j]
        if msg.role != "assistant" and msg.blocks and _gone(msg, j, strays):
            continue
        if msg.role != "assistant" or is_reasoning_item(msg):
            return False
        kept = [b for bi, b in enumerate(msg.blocks) if (j, bi) not in remove]
        if kept and (
            msg.tied_reasoning or any(isinstance(b, ToolCall) and b.tied_reasoning for b in kept)
        ):
            return True
    return False


def bare_openers(
    messages: Sequence[Message], trimmed: Mapping[int, int], rules: PairingRules
) -> list[int]:
    """The positions in ``messages`` (a repair's output) of the assistant messages a repair
    took blocks from (``trimmed``: output position -> message position) that hold nothing
    but blocks that open a turn (:attr:`~ctxwin._core.model.PairingRules.turn_openers`:
    Anthropic's thinking) and are not joined to the assistant message after them: at the
    end, or before another role, or before an assistant message that opens with its own
    thinking. They go, thinking and all; each is the thinking of blocks already gone."""
    if not rules.turn_openers:
        return []
    out: list[int] = []
    nxt: Message | None = None  # the message after, once those that go are gone
    for at in range(len(messages) - 1, -1, -1):
        msg = messages[at]
        if at in trimmed and msg.role == "assistant" and _only_openers(msg, rules):
            joined = nxt is not None and nxt.role == "assistant" and not opens_turn(nxt, rules)
            if not joined:
                out.append(at)
                continue
        nxt = msg
    out.reverse()
    return out


def _only_openers(msg: Message, rules: PairingRules) -> bool:
    """Whether ``msg`` holds turn openers and nothing else but empty text."""
    openers = [b for b in msg.blocks if isinstance(b, Opaque) and b.kind in rules.turn_openers]
    rest = [b for b in msg.blocks if not isinstance(b, Opaque) or b.kind not in rules.turn_openers]
    return bool(openers) and all(isinstance(b, Text) and not b.text for b in rest)
