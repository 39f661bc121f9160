"""``window.clear_reasoning``: the reasoning items of old rounds, and of the answers between
them (turns without calls), dropped with the round before them."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin import Policy
from ctxwin._optimum import layout
from ctxwin.formats import get_adapter
from ctxwin.replay import replay
from ctxwin.steps._reasoning import answer_reasoning, round_tied
from ctxwin.testing import FakeCounter
from tests.builders import sealed, words

ANSWER_THOUGHT = sealed(150, "y")
"""The reasoning item of the answer (the only one with 'y' in it)."""


def rnd(r: int, *, item_id: bool = False) -> list[dict[str, Any]]:
    """One round: a reasoning item, a call, its output."""
    fc: dict[str, Any] = {"type": "function_call", "call_id": f"c{r}", "name": "shell"}
    fc["arguments"] = "{}"
    if item_id:
        fc["id"] = f"fc_{r}"
    return [
        {"type": "reasoning", "summary": [], "encrypted_content": sealed(100)},
        fc,
        {"type": "function_call_output", "call_id": f"c{r}", "output": words(100)},
    ]


def answer(text: str, *, item_id: bool = False) -> list[dict[str, Any]]:
    """A turn without calls: a reasoning item and the model's message."""
    msg: dict[str, Any] = {"type": "message", "role": "assistant", "content": text}
    if item_id:
        msg["id"] = "msg_1"
    return [{"type": "reasoning", "summary": [], "encrypted_content": ANSWER_THOUGHT}, msg]


def history(
    before: int = 3, after: int = 10, *, item_id: bool = False, followed: bool = True
) -> list[dict[str, Any]]:
    """``before`` rounds, an answer, the user's next message, ``after`` more rounds."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for r in range(before):
        items += rnd(r)
    items += answer("Done with the first part.", item_id=item_id)
    if followed:
        items.append({"role": "user", "content": "Now the second part."})
    for r in range(before, before + after):
        items += rnd(r)
    return items


def policy(clear: bool = True, window: int = 2000) -> Policy:
    config = {"context_window": window, "window": {"clear_reasoning": clear, "keep_rounds": 2}}
    return Policy(config, counter=FakeCounter(), format="openai-responses")


def thoughts(items: list[Any]) -> int:
    return sum(1 for x in items if x.get("encrypted_content") == ANSWER_THOUGHT)


def test_an_answers_reasoning_goes_with_the_round_before_it() -> None:
    """The answer's reasoning goes with round 2. So do the rounds' own, and, as OpenAI
    drops the reasoning items before the user's latest message, those of the first turn
    save nothing: they go so that the window's output holds nothing it would clear were it
    applied again."""
    items = history()
    result = policy().apply({"input": items})
    out = result.request["input"]  # type: ignore[index]
    assert thoughts(out) == 0
    # the answer's message and the user's next one stay, where they were
    texts = [x.get("content") for x in out if x.get("type", "message") == "message"]
    assert texts == ["go", "Done with the first part.", "Now the second part."]
    assert ctxwin.check(result.request) == []
    dropped = [e for e in result.report.edits if e.tool == "(reasoning)"]
    answer_at = next(i for i, x in enumerate(items) if x.get("encrypted_content") == ANSWER_THOUGHT)
    notes = {e.message_index: e.note for e in dropped}
    earlier = " (of an earlier turn, which the provider no longer reads)"
    assert notes[answer_at] == "reasoning item of an old answer dropped" + earlier
    assert notes[answer_at - 3] == "reasoning item of an old round dropped" + earlier  # round 2's
    user = answer_at + 2
    assert {e.saved for e in dropped if (e.message_index or 0) < user} == {0}
    assert all(e.saved > 0 for e in dropped if (e.message_index or 0) > user)
    # the round before it was cleared, in the same jump
    jump = next(e.jump for e in dropped if e.message_index == answer_at)
    cleared = {e.call_id for e in result.report.edits if e.step == "window" and e.jump == jump}
    assert "c2" in cleared


def test_an_answers_reasoning_stays_while_the_round_before_it_does() -> None:
    """Two rounds after the answer: the round before it is still among the kept ones."""
    items = history(after=2)
    out = policy(window=1000).apply({"input": items}).request["input"]  # type: ignore[index]
    assert thoughts(out) == 1


def test_an_answers_reasoning_stays_without_clear_reasoning() -> None:
    result = policy(clear=False, window=2500).apply({"input": history()})
    assert {e.call_id for e in result.report.edits if e.step == "window"} >= {"c0", "c2"}
    assert not any(e.step == "drop" for e in result.report.edits)
    assert thoughts(result.request["input"]) == 1  # type: ignore[index]


def test_an_answer_tied_to_its_reasoning_by_an_item_id_keeps_it() -> None:
    """The API refuses a message with an item id (``msg_...``) sent without its reasoning."""
    items = history(item_id=True)
    result = policy().apply({"input": items})
    out = result.request["input"]  # type: ignore[index]
    assert thoughts(out) == 1
    # the rounds' own reasoning items still go
    assert sum(1 for x in out if x.get("type") == "reasoning") < sum(
        1 for x in items if x.get("type") == "reasoning"
    )


def test_the_adapter_ties_output_items_with_ids_to_their_reasoning() -> None:
    items = [
        {"role": "user", "content": "go", "id": "u1"},
        *answer("hi", item_id=True),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "message", "role": "assistant", "content": "plain"},
    ]
    conv = get_adapter("openai-responses").parse({"input": items})
    tied = [m.tied_reasoning for m in conv.messages]
    assert tied == [False, False, True, True, False]


def test_only_a_turn_without_calls_is_an_answer() -> None:
    items = [{"role": "user", "content": "go"}, *rnd(0), *answer("ok"), *rnd(1)]
    conv = get_adapter("openai-responses").parse({"input": items})
    assert answer_reasoning(conv, 4) == []  # the round's turn: it has a call
    assert answer_reasoning(conv, 6) == [4]  # the answer, ended by the next round's turn
    tied = get_adapter("openai-responses").parse({"input": history(item_id=True)})
    assert answer_reasoning(tied, 12) == []


def test_applied_to_its_own_output_the_window_changes_nothing() -> None:
    first = policy().apply({"input": history(after=14)})
    again = policy().apply(first.request)
    assert again.request == first.request
    assert again.report.edits == ()


def test_the_optimum_counts_an_answers_reasoning_with_the_round_before_it() -> None:
    items = history()
    pol = policy()
    body = {"input": items}
    fmt = "openai-responses"
    conv = get_adapter(fmt).parse(body)
    with_answer = layout(conv, pol.context(body, fmt)).saves
    without = layout(conv, policy(clear=False).context(body, fmt)).saves
    thought = pol.context(body, fmt).message_tokens(conv.messages[10])
    assert conv.messages[10].raw["encrypted_content"] == ANSWER_THOUGHT  # type: ignore[index]
    # round 2 (index 2) saves its result, its own reasoning and the answer's
    assert with_answer[2] - without[2] > thought
    round_thought = with_answer[1] - without[1]
    assert with_answer[2] - without[2] == round_thought + thought
    run = replay(body, pol, optimum=True, pricing="anthropic")
    assert run.optimum is not None
    assert run.managed.effective_cost >= run.optimum.effective_cost
    assert run.managed.problems == 0


def test_a_report_says_when_reasoning_it_may_not_clear_made_the_window_drop() -> None:
    items = history(after=20)
    report = policy(clear=False, window=1500).apply({"input": items}).report
    assert any(e.step == "drop" for e in report.edits)
    (note,) = report.notes
    assert note.startswith("the window dropped old messages to fit the context window while ")
    assert "window.clear_reasoning is true" in note
    share = int(note.split("make up ")[1].split("%")[0])
    assert 25 <= share <= 100


def test_no_such_note_when_clear_reasoning_is_on_or_nothing_was_dropped() -> None:
    assert policy(window=1500).apply({"input": history(after=20)}).report.notes == ()
    quiet = policy(clear=False, window=2500).apply({"input": history()}).report
    assert not any(e.step == "drop" for e in quiet.edits)
    assert quiet.notes == ()


def test_no_such_note_when_the_reasoning_is_tied_to_item_ids() -> None:
    items = [{"role": "user", "content": "go"}]
    for r in range(20):
        items += rnd(r, item_id=True)
    report = policy(clear=False, window=1500).apply({"input": items}).report
    assert any(e.step == "drop" for e in report.edits)
    assert report.notes == ()


def test_a_replay_carries_the_note_into_every_rendering() -> None:
    from ctxwin._report.html import replay_html
    from ctxwin._report.replay import replay_json, replay_markdown, replay_text

    body = {"input": history(after=20)}
    run = replay(body, policy(clear=False, window=1500), name="t.json")
    (note,) = run.notes
    assert "window.clear_reasoning is true" in note
    text = replay_text([run], width=100)
    assert "\nnotes:\n  t.json: the window dropped old messages" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert f"- `t.json`: {note}" in replay_markdown([run])
    assert '<p class="note">note: the window dropped' in replay_html([run])
    assert '"notes": [' in replay_json([run])
    assert run.to_dict()["notes"] == [note]
    quiet = replay(body, policy(window=1500), name="t.json")
    assert quiet.notes == ()
    assert "notes:" not in replay_text([quiet])


def test_a_round_whose_message_carries_an_item_id_keeps_its_reasoning() -> None:
    """A turn may say something before its call: a message with an id ties the turn's
    reasoning even when the call has none."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for r in range(12):
        reasoning, fc, out = rnd(r)
        said = {"type": "message", "role": "assistant", "content": "Looking.", "id": f"msg_{r}"}
        items += [reasoning, said, fc, out]
    out_items = policy().apply({"input": items}).request["input"]  # type: ignore[index]
    assert sum(1 for x in out_items if x.get("type") == "reasoning") == 12
    conv = get_adapter("openai-responses").parse({"input": items})
    assert round_tied(conv, 0)
    plain = get_adapter("openai-responses").parse({"input": history()})
    assert not round_tied(plain, 0)
