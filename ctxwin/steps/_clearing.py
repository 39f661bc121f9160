"""Clearing: what clearing one of the window's items would do (:class:`Plan`), and the
jumps that clear them, each message rebuilt with every clearing made there."""

from __future__ import annotations

import heapq
import re
import string
from functools import lru_cache

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo
from ctxwin._core.model import Block, Text, ToolCall, ToolResult, result_at
from ctxwin._core.records import Edit
from ctxwin.steps._base import Context
from ctxwin.steps._drops import NONE
from ctxwin.steps._fallbacks import fallback_of
from ctxwin.steps._foldstate import FoldState, Plan, shorten_arguments
from ctxwin.steps._handles import handle_of
from ctxwin.steps._placeholder import placeholder_text, recall_handle

__all__ = ["jump", "plan_result", "reads_cleared", "rebuild"]


def plan_result(
    conv: Conversation, mi: int, bi: int, ctx: Context, unkept: bool = False
) -> Plan | None:
    """What clearing the result at ``(mi, bi)`` would do (None: it cannot be cleared),
    worked out without the store (:func:`recall_handle` says when it reads it): the jump
    that clears it keeps its original (``unkept``: the store failed to then, and its
    placeholder quotes no handle)."""
    messages = conv.messages
    result = result_at(messages, (mi, bi))
    tool = conv.tool_of((mi, bi))
    rules = ctx.rules_for(tool)
    if rules is not None and rules.rules.window == "keep":
        return None
    if result.loads_tools:
        return None  # tool definitions the model loaded: no placeholder can stand for them
    template = _template(tool, ctx)
    if _cleared_already(result, template, tool, ctx):
        return None  # the breakpoints' frontier passes it over too (reads_cleared)
    before = ctx.block_tokens(result)
    handle, original = recall_handle(result, tool, ctx)  # "": a step's store failed to keep it
    handle = "" if unkept and handle else handle
    text, after = _placeholder(result, tool, template, handle, before, ctx)
    if after >= before:
        return None  # never cleared: its original is never kept
    call_loc = conv.pairing.call_of.get((mi, bi))
    call = conv.call_of((mi, bi))
    call_saved = 0
    shortens = ctx.config.window.clear_tool_inputs
    if shortens and call is not None and not conv.pairing.further((mi, bi)):  # first result
        short = shorten_arguments(call.arguments, call.typed)
        if short != call.arguments:
            args, kept = ctx.count(call.arguments), ctx.count(short)
            call_saved = max(args - kept, 0)
    index = messages[mi].index
    edits = [
        Edit(
            "window",
            tool,
            result.call_id,
            before,
            after,
            fallback=_not_kept(result, ctx) if handle == "" else None,
            message_index=index,
            chars_before=len(result.text),
            chars_after=len(text),
        )
    ]
    if call_saved:  # at the call, its arguments as they were and are now
        at = messages[call_loc[0]].index if call_loc is not None else index
        edits.append(Edit("clear_input", tool, result.call_id, args, kept, message_index=at))
    original = original if handle else None
    saves = before - after + call_saved
    return Plan((mi, bi), saves, text, call_loc, call_saved, tuple(edits), original)


def _placeholder(
    result: ToolResult, tool: str, template: str, handle: str | None, before: int, ctx: Context
) -> tuple[str, int]:
    """The placeholder of ``result`` quoting ``handle`` (``""`` or None: none), and the
    tokens of what is sent in its place (text, or an image)."""
    text = placeholder_text(template, handle or None, ctx).format(
        tool=tool, call_id=result.call_id or "", tokens=before, handle=handle or ""
    )
    return text, ctx.meter.replaced(result, text)


def _not_kept(result: ToolResult, ctx: Context) -> str:
    """Why a clearing quotes no handle: the store refused the original (over
    ``max_bytes``, or full) or failed; for a result a step shortened, what that step's
    store call found (:attr:`~ctxwin._core.model.ToolResult.not_kept`), as its edit
    says."""
    if result.origin is None and ctx.shelf is not None:
        return ctx.shelf.not_kept(handle_of(result.text), cleared=True)
    return fallback_of(result.not_kept or "store_down", cleared=True)


def reads_cleared(result: ToolResult, tool: str, ctx: Context) -> bool:
    """Whether ``result`` (of ``tool``) reads as the policy's placeholder for it (the
    policy's own output sent back): the window clears it no more, and tells no edit of it."""
    return _cleared_already(result, _template(tool, ctx), tool, ctx)


def _template(tool: str, ctx: Context) -> str:
    """The placeholder template of ``tool``'s results: its own, else the window's."""
    rules = ctx.rules_for(tool)
    return (rules.rules.placeholder if rules is not None else None) or (
        ctx.config.window.placeholder
    )


def _cleared_already(result: ToolResult, template: str, tool: str, ctx: Context) -> bool:
    """Whether the result reads as a placeholder of the policy's for it: its own output sent
    back. Cleared again, it would read the same but for its count of tokens (those of the
    placeholder, fewer or more as digits go), and the prefix the provider cached would
    break: ``apply`` is a fixed point."""
    parts = result.content
    if len(parts) != 1 or not isinstance(parts[0], Text):
        return False
    forms = [placeholder_text(template, None, ctx)]  # no recall, or the store was down
    if ctx.recall_on(tool):
        forms.append(placeholder_text(template, "r-0", ctx))  # the form with a handle
    call_id = result.call_id or ""
    for form in forms:
        found = _placeholder_pattern(form, tool).fullmatch(parts[0].text)
        if found is not None and found.groupdict().get("call_id", call_id) == call_id:
            return True
    return False


@lru_cache(maxsize=256)
def _placeholder_pattern(form: str, tool: str) -> re.Pattern[str]:
    """What a placeholder of ``form`` for ``tool`` reads as: any count of tokens, any recall
    handle (``r-`` and hex digits), one call id (the match names it: ``call_id``)."""
    out: list[str] = []
    call_id = "(?P<call_id>[^\\n]*?)"  # then the same again: (?P=call_id)
    for literal, name, _, _ in string.Formatter().parse(form):  # plain names: checked at load
        out.append(re.escape(literal))
        if name == "tool":
            out.append(re.escape(tool))
        elif name == "tokens":
            out.append("[0-9]+")
        elif name == "handle":
            out.append("r-[0-9a-f]+")
        elif name == "call_id":
            out.append(call_id)
            call_id = "(?P=call_id)"
        elif name is not None:
            out.append("(?s:.*?)")
    return re.compile("".join(out))


def jump(
    st: FoldState,
    conv: Conversation,
    ctx: Context,
    target: int,
    rebuilt: Memo,
    again: bool = False,
) -> list[Plan]:
    """Clear the oldest eligible items until the total is under ``target``: one jump
    (``again``: the latest one going on through its request). Returns what it cleared.

    The original a placeholder's handle names is kept here, by the first request that
    sends it (:func:`_sent`), not when the result was planned (which may be many requests
    before, the store down then or the put past its TTL since)."""
    again = again and st.events > 0
    jump = st.events - 1 if again else st.events
    done = False
    made: list[Plan] = []
    while st.total > target and st.eligible:
        _, mi, bi = heapq.heappop(st.eligible)
        plan = st.plans.pop((mi, bi), None)
        if plan is None:  # dropped since it became eligible
            continue
        st.savings -= plan.saves
        if plan.original is not None and (plan := _sent(conv, plan, ctx)) is None:
            continue  # the store failed, and a placeholder without a handle is not shorter
        made.append(plan)
        if bi < 0:
            _clear_reasoning(st, conv, mi, plan, jump)
        else:
            _clear(st, conv, plan, rebuilt, jump)
        done = True
    if done and not again:
        st.events += 1
    st.note_changes(made)
    return made


def _sent(conv: Conversation, plan: Plan, ctx: Context) -> Plan | None:
    """``plan`` as its jump sends it: its original kept now; when the store fails to (or
    refuses it), planned again without a handle (None: that is not shorter, and the result
    is left as it is)."""
    shelf, original = ctx.shelf, plan.original
    if shelf is None or original is None or shelf.keep(original) is not None:
        return plan
    return plan_result(conv, plan.loc[0], plan.loc[1], ctx, unkept=True)


def _clear(st: FoldState, conv: Conversation, plan: Plan, rebuilt: Memo, jump: int) -> None:
    mi = plan.loc[0]
    plan.edits = tuple(e.in_jump(jump) for e in plan.edits)
    st.cleared[plan.loc] = plan
    st.fresh.extend(plan.edits)
    st.note_cleared(plan)
    st.edits_at[mi] = [*st.edits_at.get(mi, ()), plan]  # a new list: forks share them
    rebuild(st, conv, mi, rebuilt)
    call_loc = plan.call_loc
    if plan.call_saved and call_loc is not None:
        st.cur[call_loc[0]] -= plan.call_saved
        if call_loc[0] != mi:
            st.edits_at[call_loc[0]] = [*st.edits_at.get(call_loc[0], ()), plan]
        rebuild(st, conv, call_loc[0], rebuilt)
    st.cur[mi] -= plan.saves - plan.call_saved
    st.total -= plan.saves
    st.lower_reads(mi, plan.saves - plan.call_saved)
    if plan.call_saved and call_loc is not None:
        st.lower_reads(call_loc[0], plan.call_saved)


def _clear_reasoning(st: FoldState, conv: Conversation, mi: int, plan: Plan, jump: int) -> None:
    """Drop a reasoning item of an old round (or of the answer after it)."""
    tokens = st.cur[mi]
    of = "round" if conv.pairing.round_of_message.get(mi) is not None else "answer"
    why = " (of an earlier turn, which the provider no longer reads)" if plan.unread else ""
    st.cur[mi] = 0
    st.out[mi] = None
    st.dropped_set.add(mi)
    st.total -= tokens
    st.lower_reads(mi, tokens)
    edit = Edit(
        "window",
        "(reasoning)",
        None,
        tokens,
        0,
        message_index=conv.messages[mi].index,
        note=f"reasoning item of an old {of} dropped{why}",
        jump=jump,
    )
    st.reasoning_at[mi] = len(st.reasoning)
    st.reasoning.append(edit)
    st.fresh.append(edit)
    st.listed = None


def rebuild(st: FoldState, conv: Conversation, mi: int, rebuilt: Memo) -> None:
    """The output message at ``mi`` with every clearing made there so far."""
    if mi in st.dropped_set:
        return
    msg = conv.messages[mi]
    edits = st.edits_at.get(mi, ())
    cut = st.cut.get(mi, NONE)  # blocks dropped as they came (_drops.late)
    key = (
        *(
            (
                c.loc,
                c.placeholder,
                bool(c.call_saved) and c.call_loc is not None and c.call_loc[0] == mi,
            )
            for c in edits
        ),
        cut,
    )
    salt = hash(key)
    hit = rebuilt.get(msg, salt)
    if isinstance(hit, tuple) and hit[0] == key:
        st.out[mi] = hit[1]
        return
    blocks: list[Block] = list(msg.blocks)
    for c in edits:
        if c.loc[0] == mi:
            res = blocks[c.loc[1]]
            assert isinstance(res, ToolResult)
            blocks[c.loc[1]] = res.with_text(c.placeholder, keep_opaque=False)
        if c.call_saved and c.call_loc is not None and c.call_loc[0] == mi:
            call = blocks[c.call_loc[1]]
            assert isinstance(call, ToolCall)
            blocks[c.call_loc[1]] = call.with_arguments(
                shorten_arguments(call.arguments, call.typed)
            )
    new = msg.with_blocks(tuple(b for bi, b in enumerate(blocks) if bi not in cut))
    rebuilt.put(msg, (key, new), salt)
    st.out[mi] = new
