"""Rules a provider applies across the whole request, not within one turn: call ids unique in
the request (Anthropic), a reasoning item followed by an item of its turn (OpenAI
Responses); and a normalizing repair that changes nothing the second time."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import ctxwin
from ctxwin import Policy
from ctxwin._core.check import find, has_errors
from ctxwin._core.pairing import Linker
from ctxwin._core.repair import repair_conversation
from ctxwin.testing import FakeCounter
from tests._core.neutral import ANYWHERE, GROUPED, Describer, calls, conv, results, user

UNIQUE = dataclasses.replace(GROUPED, unique_ids=True)
"""Anthropic's rules: results grouped in the next user message, call ids unique anywhere."""


def found(c: object) -> list[tuple[str, tuple[int, int], str | None]]:
    return [(f.code, f.loc, f.call_id) for f in find(c, warnings=False).found]  # type: ignore[arg-type]


# ----------------------------------------------------------- ids unique in the request


def reused(rules: Any = UNIQUE) -> Any:
    return conv(
        rules,
        user("go"),
        calls("a"),
        results("a", role="user"),
        calls("a"),
        results("a", role="user"),
    )


def test_an_id_an_earlier_turn_used_is_a_duplicate_where_ids_are_unique_in_the_request() -> None:
    assert found(reused()) == [("duplicate_call_id", (3, 0), "a")]
    assert has_errors(reused())


def test_an_id_reused_across_turns_is_no_problem_where_ids_are_unique_per_turn() -> None:
    assert found(reused(GROUPED)) == []
    assert not has_errors(reused(GROUPED))


def test_an_id_repeated_in_a_later_turn_is_reported_once_per_call() -> None:
    c = conv(
        UNIQUE,
        user("go"),
        calls("a"),
        results("a", role="user"),
        calls("a", "a"),
        results("a", "a", role="user"),
    )
    assert found(c) == [("duplicate_call_id", (3, 0), "a"), ("duplicate_call_id", (3, 1), "a")]


def test_repair_renames_the_later_turns_call_with_its_result() -> None:
    fixed, fixes = repair_conversation(reused(), Describer())
    assert [(f.code, f.call_id) for f in fixes] == [("renamed_duplicate_call_id", "a")]
    assert "earlier turn" in fixes[0].description
    assert [b.id for m in fixed.messages for b in m.tool_calls] == ["a", "a_2"]
    assert [b.call_id for m in fixed.messages for b in m.tool_results] == ["a", "a_2"]
    assert fixed.pairing.call_of[(4, 0)] == (3, 0)
    assert not has_errors(fixed)


def test_a_linker_fed_a_round_at_a_time_notes_the_reuse_in_the_new_round() -> None:
    """The engine's linker resumes where the previous request stopped: the id set grows with
    each call fed, and the verdicts cached for final rounds do not hide the new duplicate."""
    c = reused()
    linker = Linker(UNIQUE)
    linker.feed(c.messages[:3])
    before = c.with_messages(c.messages[:3])
    before.set_pairing(linker.pairing())
    assert not has_errors(before, linker.verdicts)
    linker.feed(c.messages)
    after = c.with_messages(c.messages)
    after.set_pairing(linker.pairing())
    assert after.pairing.reused_ids == ((3, 0),)
    assert has_errors(after, linker.verdicts)


def anthropic_call_0_every_turn() -> dict[str, Any]:
    """A backend behind a proxy numbering its calls ``call_0`` in every response
    (NVIDIA-NeMo/Switchyard#502)."""

    def turn(city: str, weather: str) -> list[dict[str, Any]]:
        use = {"type": "tool_use", "id": "call_0", "name": "weather", "input": {"city": city}}
        res = {"type": "tool_result", "tool_use_id": "call_0", "content": weather}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [res]}]

    messages = [{"role": "user", "content": "weather in Paris then Rome"}]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": messages + turn("Paris", "Sunny") + turn("Rome", "Rain"),
    }


def ids(b: Any) -> tuple[list[str], list[str]]:
    blocks = [blk for m in b["messages"] if isinstance(m["content"], list) for blk in m["content"]]
    return (
        [blk["id"] for blk in blocks if blk["type"] == "tool_use"],
        [blk["tool_use_id"] for blk in blocks if blk["type"] == "tool_result"],
    )


def test_anthropic_check_names_the_call_whose_id_an_earlier_message_used() -> None:
    (p,) = ctxwin.check(anthropic_call_0_every_turn())
    assert (p.code, p.path, p.message_index, p.call_id, p.tool) == (
        "duplicate_call_id",
        "messages[3].content[0]",
        3,
        "call_0",
        "weather",
    )
    assert p.message == "messages.3: `tool_use` ids must be unique"


def test_anthropic_repair_gives_the_later_call_and_its_result_a_new_id() -> None:
    b = anthropic_call_0_every_turn()
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    assert ids(fixed) == (["call_0", "call_0_2"], ["call_0", "call_0_2"])
    assert fixed["messages"][4]["content"][0]["content"] == "Rain"  # still with its call
    assert ctxwin.check(fixed) == []
    assert ctxwin.repair(fixed) == (fixed, [])
    assert ids(b) == (["call_0", "call_0"], ["call_0", "call_0"])  # input untouched


def test_anthropic_apply_sends_unique_ids_on_every_request_of_a_growing_history() -> None:
    b = anthropic_call_0_every_turn()
    policy = Policy({}, counter=FakeCounter(), format="anthropic")
    first = policy.apply({**b, "messages": b["messages"][:3]})
    assert ids(first.request) == (["call_0"], ["call_0"])
    second = policy.apply(b)  # the linker resumes: only the new round is read
    assert ids(second.request) == (["call_0", "call_0_2"], ["call_0", "call_0_2"])
    assert ctxwin.check(second.request) == []


def _call_0_turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        use = {"type": "tool_use", "id": "call_0", "name": "ls", "input": {"i": i}}
        out.append({"role": "assistant", "content": [use]})
        res = {"type": "tool_result", "tool_use_id": "call_0", "content": f"r{i}"}
        out.append({"role": "user", "content": [res]})
    return out


def test_a_history_renamed_at_every_request_is_renamed_into_the_same_messages() -> None:
    """An agent repeating ``call_0`` every turn is renamed at every request: each renamed
    message was a new object every time, so every memo after repair (kept by identity)
    missed, and an apply cost the whole history (137 ms at 3,000 turns, 23 ms now). The
    renamed messages are now the same objects from one request to the next, and the
    output is what a fresh policy gives."""
    messages = _call_0_turns(40)
    policy = Policy({}, counter=FakeCounter(), format="anthropic")
    first = policy.apply({"messages": messages[:61]})
    second = policy.apply({"messages": messages})
    old, new = first.conversation.messages, second.conversation.messages
    assert all(a is b for a, b in zip(old, new[: len(old)], strict=True))
    fresh = Policy({}, counter=FakeCounter(), format="anthropic").apply({"messages": messages})
    assert second.request == fresh.request
    assert [f.description for f in second.fixes] == [f.description for f in fresh.fixes]
    assert ctxwin.check(second.request) == []
    again = policy.apply({"messages": messages})
    assert all(a is b for a, b in zip(again.conversation.messages, new, strict=True))


def test_split_turns_merged_at_every_request_are_merged_into_the_same_messages() -> None:
    """Gemini parallel calls split across two model messages are merged at every request:
    the merged message was new each time, so renaming its repeated ids missed its memo and
    kept a new entry for each (80,600 after 400 requests; review)."""

    def call(name: str, i: int) -> dict[str, Any]:
        return {"functionCall": {"id": "call_0", "name": name, "args": {"i": i}}}

    def answer(name: str, i: int) -> dict[str, Any]:
        return {"functionResponse": {"id": "call_0", "name": name, "response": {"out": i}}}

    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for i in range(30):
        contents += [
            {"role": "model", "parts": [call("ls", i)]},
            {"role": "model", "parts": [call("cat", i)]},
            {"role": "user", "parts": [answer("ls", i), answer("cat", i)]},
        ]
    policy = Policy({}, counter=FakeCounter(), format="gemini")
    first = policy.apply({"contents": contents[:46]})
    second = policy.apply({"contents": contents})
    old, new = first.conversation.messages, second.conversation.messages
    assert all(a is b for a, b in zip(old, new[: len(old)], strict=True))
    fresh = Policy({}, counter=FakeCounter(), format="gemini").apply({"contents": contents})
    assert second.request == fresh.request
    assert ctxwin.check(second.request) == []


def test_openai_chat_takes_an_id_reused_across_turns() -> None:
    """Chat accepts it (tau-bench's recorded GPT-4o requests reuse ids across turns): no
    problem, nothing renamed."""

    b = chat_call_0_every_turn("gpt-4o")
    assert ctxwin.check(b, format="openai-chat") == []
    assert ctxwin.repair(b, format="openai-chat") == (b, [])
    assert ctxwin.check({k: v for k, v in b.items() if k != "model"}) == []


def chat_call_0_every_turn(model: str) -> dict[str, Any]:
    def turn(cid: str, text: str) -> list[dict[str, Any]]:
        call = {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": text},
        ]

    first = {"role": "user", "content": "go"}
    return {"model": model, "messages": [first, *turn("call_0", "a"), *turn("call_0", "b")]}


def chat_ids(b: Any) -> list[str]:
    return [
        m.get("tool_call_id") or m["tool_calls"][0]["id"]
        for m in b["messages"]
        if m["role"] != "user"
    ]


def test_a_chat_body_for_a_claude_model_is_held_to_unique_ids_in_the_request() -> None:
    """A GPT history handed to Claude through LiteLLM (``anthropic/claude-...``) reaches
    Anthropic with its ids as they are: ``call_0`` in two turns is refused there ("tool_use
    ids must be unique"). check reports it, repair and apply rename the later call with its
    result, whether the body or the ``model=`` argument names the model."""
    b = chat_call_0_every_turn("anthropic/claude-sonnet-4-5")
    (p,) = ctxwin.check(b)
    assert (p.code, p.message_index, p.call_id) == ("duplicate_call_id", 3, "call_0")
    fixed, fixes = ctxwin.repair(b)
    assert [f.code for f in fixes] == ["renamed_duplicate_call_id"]
    assert chat_ids(fixed) == ["call_0", "call_0", "call_0_2", "call_0_2"]
    assert [m["content"] for m in fixed["messages"] if m["role"] == "tool"] == ["a", "b"]
    policy = Policy({}, counter=FakeCounter(), format="openai-chat")
    assert chat_ids(policy.apply(b).request) == chat_ids(fixed)
    unnamed = {k: v for k, v in b.items() if k != "model"}
    assert chat_ids(policy.apply(unnamed).request) == chat_ids(b)  # no model: OpenAI's rules
    assert chat_ids(policy.apply(unnamed, model="claude-opus-4-1").request) == chat_ids(fixed)
    assert chat_ids(b) == ["call_0", "call_0", "call_0", "call_0"]  # input untouched


# ------------------------------------------------- reasoning followed by its turn's item


def rs(n: int, *, with_id: bool = True) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "summary": [], "encrypted_content": f"gAAA{n}"}
    return {"id": f"rs_{n}", **item} if with_id else item


def fc(cid: str, *, item_id: str | None = None) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": cid, "name": "t", "arguments": "{}"}
    return {**item, "id": item_id} if item_id else item


def out(cid: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": f"result of {cid}"}


def said(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def responses(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "input": list(items)}


def check(b: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(p.code, p.path, p.message) for p in ctxwin.check(b, format="openai-responses")]


def test_reasoning_with_an_id_and_no_item_of_its_turn_after_it_is_refused() -> None:
    """What the API answers (continuedev/continue#8933): the item the reasoning came with
    was dropped, and a user message follows it."""
    b = responses(said("go"), rs(1), said("and?"))
    assert check(b) == [
        (
            "orphan_result",
            "input[1]",
            "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
        )
    ]


def test_reasoning_last_in_the_input_has_nothing_after_it() -> None:
    assert [c for c, _, _ in check(responses(said("go"), rs(1)))] == ["orphan_result"]


def test_repair_drops_the_reasoning_nothing_follows() -> None:
    b = responses(said("go"), rs(1), said("and?"), rs(2), fc("a", item_id="fc_2"), out("a"))
    fixed, fixes = ctxwin.repair(b, format="openai-responses")
    assert [(f.code, f.path) for f in fixes] == [("dropped_orphan_result", "input[1]")]
    assert isinstance(fixed, dict)
    assert fixed["input"] == [said("go"), said("and?"), *b["input"][3:]]
    assert check(fixed) == []
    assert ctxwin.repair(fixed, format="openai-responses") == (fixed, [])


def test_a_run_of_reasoning_items_with_nothing_after_goes_in_one_repair() -> None:
    b = responses(said("go"), rs(1), rs(2), said("and?"))
    assert [p for _, p, _ in check(b)] == ["input[1]", "input[2]"]
    fixed, fixes = ctxwin.repair(b, format="openai-responses")
    assert len(fixes) == 2
    assert isinstance(fixed, dict)
    assert fixed["input"] == [said("go"), said("and?")]
    assert ctxwin.repair(fixed, format="openai-responses") == (fixed, [])


def test_apply_drops_the_reasoning_nothing_follows() -> None:
    b = responses(said("go"), rs(1), said("and?"))
    result = Policy({}, counter=FakeCounter(), format="openai-responses").apply(b)
    assert result.request["input"] == [said("go"), said("and?")]


def test_reasoning_followed_by_reasoning_then_its_call_is_no_problem() -> None:
    b = responses(said("go"), rs(1), rs(2), fc("a", item_id="fc_2"), out("a"))
    assert check(b) == []


def test_reasoning_without_an_id_is_not_held_to_a_following_item() -> None:
    """The API names the reasoning it refuses by its id; one sent without (store false,
    encrypted content only, as Codex sends it) is not known to be checked: no problem."""
    assert check(responses(said("go"), rs(1, with_id=False), said("and?"))) == []


def test_a_call_with_an_item_id_and_no_reasoning_before_it_is_no_problem() -> None:
    """The API refuses it only when the response that made the call had a reasoning item
    (mastra-ai/mastra#8738); a non-reasoning model's calls have item ids and no reasoning,
    and the request cannot tell them apart: not flagged."""
    assert check(responses(said("go"), fc("a", item_id="fc_1"), out("a"))) == []


def dev(text: str) -> dict[str, Any]:
    return {"role": "developer", "content": text}


def repaired(b: dict[str, Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    """The repaired input and its fixes (code, path): nothing left to check, a second repair
    changes nothing, and apply sends the same."""
    fixed, fixes = ctxwin.repair(b, format="openai-responses")
    assert isinstance(fixed, dict)
    assert check(fixed) == []
    assert ctxwin.repair(fixed, format="openai-responses") == (fixed, [])
    policy = Policy({}, counter=FakeCounter(), format="openai-responses")
    assert policy.apply(b).request == fixed
    return fixed["input"], [(f.code, f.path) for f in fixes]


def test_a_stray_output_between_reasoning_and_its_call_is_not_the_item_after_it() -> None:
    """Repair drops the stray and the reasoning stands right before its call again: only the
    stray is reported and dropped (the reasoning went too, and the fc_ call was refused
    without it: "Item 'fc_1' of type 'function_call' was provided without its required
    'reasoning' item", mastra-ai/mastra#8738)."""
    b = responses(said("go"), rs(1), out("stale"), fc("a", item_id="fc_1"), out("a"))
    assert [(c, p) for c, p, _ in check(b)] == [("orphan_result", "input[2]")]
    items, fixes = repaired(b)
    assert fixes == [("dropped_orphan_result", "input[2]")]
    assert items == [said("go"), rs(1), fc("a", item_id="fc_1"), out("a")]


def test_a_duplicate_output_between_reasoning_and_its_call_is_not_the_item_after_it() -> None:
    b = responses(said("go"), fc("a"), out("a"), rs(1), out("a"), fc("b", item_id="fc_1"))
    items, fixes = repaired({"input": [*b["input"], out("b")]})
    assert fixes == [("dropped_duplicate_result", "input[4]")]
    assert items[3:5] == [rs(1), fc("b", item_id="fc_1")]


def test_an_output_before_its_call_between_reasoning_and_the_call_moves_after_it() -> None:
    b = responses(said("go"), rs(1), out("a"), fc("a", item_id="fc_1"))
    assert [(c, p) for c, p, _ in check(b)] == [("misplaced_result", "input[2]")]
    items, fixes = repaired(b)
    assert fixes == [("moved_result", "input[2]")]
    assert items == [said("go"), rs(1), fc("a", item_id="fc_1"), out("a")]


def test_reasoning_a_message_cut_from_its_call_moves_right_before_the_call() -> None:
    """A user or developer message inserted between a reasoning item and its fc_ call: the
    reasoning is refused where it stands, and dropped the call would be refused without it
    (the two pair only when adjacent). It moves to the call; the message reads before it."""
    for mid in (said("hurry up"), dev("note")):
        b = responses(said("go"), rs(1), mid, fc("a", item_id="fc_1"), out("a"))
        assert check(b) == [
            (
                "orphan_result",
                "input[1]",
                "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
            )
        ]
        items, fixes = repaired(b)
        assert items == [said("go"), mid, rs(1), fc("a", item_id="fc_1"), out("a")]
        assert fixes == [("moved_result", "input[1]")]


def test_a_run_of_reasoning_and_strays_cut_by_messages_moves_whole_to_its_answer() -> None:
    msg = {"type": "message", "id": "msg_1", "role": "assistant", "content": "done"}
    b = responses(said("go"), rs(1), rs(2), out("x"), said("a"), dev("b"), out("y"), msg)
    items, fixes = repaired(b)
    assert items == [said("go"), said("a"), dev("b"), rs(1), rs(2), msg]
    assert [c for c, _ in fixes] == ["dropped_orphan_result"] * 2 + ["moved_result"] * 2


def test_reasoning_cut_from_an_item_that_needs_none_goes() -> None:
    """A call with no item id needs no reasoning: after the message, the reasoning (refused
    where it stands) goes, as before."""
    b = responses(said("go"), rs(1), said("and?"), fc("a"), out("a"))
    items, fixes = repaired(b)
    assert items == [said("go"), said("and?"), fc("a"), out("a")]
    assert fixes == [("dropped_orphan_result", "input[1]")]


def test_a_linker_fed_item_by_item_resumes_the_cut_reasoning_with_its_call() -> None:
    """The engine's linker reads each request's new items only: the reasoning cut by a
    message is unfollowed until the call comes, then moved to it."""
    b = responses(said("go"), rs(1), said("hurry up"), fc("a", item_id="fc_1"), out("a"))
    policy = Policy({}, counter=FakeCounter(), format="openai-responses")
    first = policy.apply(responses(*b["input"][:3]))
    assert first.request["input"] == [said("go"), said("hurry up")]
    second = policy.apply(b)
    assert second.request["input"] == [said("go"), said("hurry up"), rs(1), *b["input"][3:]]
    assert [f.code for f in second.fixes] == ["moved_result"]


# -------------------------------------------------------- normalize, then nothing left


def test_normalize_orders_the_results_of_turns_a_move_joined() -> None:
    """An output before its call is moved after it; the calls it stood between become one
    turn, whose outputs go in call order in the same repair: a second one changes nothing."""
    b = responses(said("go"), fc("a"), out("b"), fc("b"), out("a"))
    once, fixes = ctxwin.repair(b, format="openai-responses", normalize=True)
    assert [f.code for f in fixes] == ["moved_result", "reordered_results"]
    assert isinstance(once, dict)
    assert once["input"] == [said("go"), fc("a"), fc("b"), out("a"), out("b")]
    assert ctxwin.repair(once, format="openai-responses", normalize=True) == (once, [])


def test_normalize_orders_the_results_of_turns_a_drop_joined() -> None:
    c = conv(ANYWHERE, user("go"), calls("a"), results("x"), calls("b"), results("b", "a"))
    once, fixes = repair_conversation(c, Describer(), normalize=True)
    assert [f.code for f in fixes] == ["dropped_orphan_result", "reordered_results"]
    assert [b.call_id for m in once.messages for b in m.tool_results] == ["a", "b"]
    again, more = repair_conversation(once, Describer(), normalize=True)
    assert more == []
    assert again.messages == once.messages


def test_a_move_that_joins_two_turns_calling_the_same_id_renames_one() -> None:
    """A stray output between two turns that each call call_0_0 was moved after its own
    call: the two turns became one holding call_0_0 twice, and the repaired request had a
    duplicate_call_id (found by the damaged-conversations property, seed of another run)."""

    def reasoning(n: int) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": ":"}]
        return {"type": "reasoning", "id": f"rs_{n}", "summary": summary, "encrypted_content": "e"}

    def call(i: str) -> dict[str, Any]:
        return {"type": "function_call", "call_id": i, "name": "get_order", "arguments": "{}"}

    def output(i: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": i, "output": ":"}

    said = {"role": "user", "content": ":"}
    items = [said, reasoning(1), call("call_0_0"), output("call_3_0"), reasoning(2)]
    items += [call("call_0_0"), output("call_0_0"), output("call_0_0")]
    items += [reasoning(4), call("call_3_0"), said]
    body = {"model": "gpt-5", "input": items}
    fixed, fixes = ctxwin.repair(body)
    assert [f.code for f in fixes] == ["moved_result", "renamed_duplicate_call_id"]
    assert [p for p in ctxwin.check(fixed) if p.severity == "error"] == []
    assert ctxwin.repair(fixed) == (fixed, [])


def test_reasoning_that_would_move_before_a_dropped_item_is_dropped_once() -> None:
    """Cut off by a user message, its turn's next item a program's call without the
    program: the fixes said the reasoning moved before that call, then dropped it, and the
    call was dropped too (review of d453b4c)."""
    program = {"type": "program", "caller_id": "prog_1"}
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "e"},
        {"role": "user", "content": "hurry"},
        {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}", "id": "fc_1"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"role": "user", "content": "next"},
    ]
    items[3]["caller"] = items[4]["caller"] = program
    fixed, fixes = ctxwin.repair({"model": "gpt-5", "input": items}, format="openai-responses")
    assert [(f.code, f.path) for f in fixes] == [
        ("dropped_orphan_result", "input[3]"),
        ("dropped_orphan_result", "input[4]"),
        ("dropped_orphan_result", "input[1]"),
    ]
    assert [i.get("role") for i in fixed["input"]] == ["user", "user", "user"]


def test_a_request_of_only_reasoning_nothing_follows_says_what_went() -> None:
    """Repair drops the reasoning, and the request is empty: the error said the only
    message was a result of a call not in the request (CI's hypothesis run found it)."""
    b = responses(rs(1))
    for attempt in (lambda: ctxwin.repair(b), lambda: Policy({}).apply(b)):
        with pytest.raises(ctxwin.InputError) as e:
            attempt()
        assert "nothing is left after repair: the only message went (reasoning" in str(e.value)
        assert "result" not in str(e.value)
