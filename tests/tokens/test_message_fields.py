"""Message fields the OpenAI Chat adapter does not parse into blocks but the provider reads
(DeepSeek's ``reasoning_content``, OpenAI's ``name``...) count with their message: in the
report, in the window and in the budget, after an in-place edit too."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxwin
from ctxwin import BudgetExceeded
from ctxwin._core.jsontext import compact_json
from ctxwin.testing import FakeCounter
from tests.builders import asst, call, tool, user, words

FMT = "openai-chat"


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": list(messages)}


def thinking(r: int, reasoning: str) -> dict[str, Any]:
    """DeepSeek's assistant message of a tool-call turn: its reasoning comes back with it."""
    m = asst(call(f"c{r}", "search", {"q": f"q{r}"}))
    m["reasoning_content"] = reasoning
    return m


def turn(*extra: tuple[str, object]) -> dict[str, Any]:
    """user, an assistant message with ``extra`` fields and its call, the result."""
    a = asst(call("c0", "search", {"q": "x"}))
    a.update(extra)
    return body(user("go"), a, tool("c0", "found"))


def tokens(b: object, policy: ctxwin.Policy | None = None) -> int:
    p = policy or ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
    return p.apply(b, format=FMT).tokens


def agent_history(rounds: int, reasoning: int = 40) -> list[dict[str, Any]]:
    msgs = [{"role": "system", "content": "You are an agent."}, user("Do the task.")]
    for r in range(rounds):
        msgs.append(thinking(r, words(reasoning, f"t{r}")))
        msgs.append(tool(f"c{r}", words(100, f"w{r}")))
    return msgs


# ------------------------------------------------------------------------------ counted


def test_reasoning_content_counts_with_its_message() -> None:
    assert tokens(turn(("reasoning_content", words(500)))) - tokens(turn()) == 500


def test_an_sdk_messages_reasoning_content_counts() -> None:
    """The SDK object goes back with its reasoning_content (``from_object``): it counts."""
    chat = pytest.importorskip("openai.types.chat")
    message = chat.ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c0", "search", {"q": "x"})],
            "reasoning_content": words(300),
        }
    )
    with_it = body(user("go"), message, tool("c0", "found"))
    assert tokens(with_it) - tokens(turn()) == 300


def test_a_message_name_counts_with_one_token_more() -> None:
    """OpenAI bills ``name`` and one token for it (the cookbook's tokens_per_name)."""
    named = body({"role": "user", "content": "go", "name": "alice"})
    assert tokens(named) - tokens(body(user("go"))) == 2


def test_refusal_and_audio_count_as_their_text() -> None:
    plain = body(user("go"), {"role": "assistant", "content": "x"})
    refused = copy.deepcopy(plain)
    refused["messages"][1].update(refusal="I cannot help with that", audio={"id": "a 1"})
    assert tokens(refused) - tokens(plain) == 5 + 2


def test_the_same_reasoning_under_two_keys_counts_once() -> None:
    """LiteLLM's message holds its reasoning as reasoning_content and thinking_blocks: the
    provider reads one of them, so the larger counts, not their sum."""
    blocks = [{"type": "thinking", "thinking": words(100), "signature": "sig"}]
    both = turn(("reasoning_content", words(100)), ("thinking_blocks", blocks))
    assert tokens(both) - tokens(turn()) == 100


def test_a_non_string_field_counts_as_its_json_text() -> None:
    counter = ctxwin.TiktokenCounter("o200k_base")
    details = [{"type": "reasoning.text", "text": "I should search the code first.", "index": 0}]
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=counter)
    added = tokens(turn(("reasoning_details", details)), policy) - tokens(turn(), policy)
    assert added == counter.count(compact_json(details))


def test_null_and_empty_fields_count_nothing() -> None:
    empty = turn(("reasoning_content", ""), ("name", None), ("provider_specific_fields", {}))
    assert tokens(empty) == tokens(turn())


def test_prose_without_spaces_in_an_opaque_part_counts_as_text() -> None:
    """Chinese has no spaces: a long text of it in an opaque part is prose, not a base64
    blob to count at one token per four characters (under a third of its tokens)."""
    counter = ctxwin.TiktokenCounter("o200k_base")
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=counter)
    part = {"type": "refusal", "refusal": "我不能帮助你完成这个请求因为它违反了使用政策" * 20}
    plain = body(user("go"), {"role": "assistant", "content": [{"type": "text", "text": "x"}]})
    refused = copy.deepcopy(plain)
    refused["messages"][1]["content"].append(part)
    assert tokens(refused, policy) - tokens(plain, policy) == counter.count(compact_json(part))


# ------------------------------------------------------------------------------ budget


def test_reasoning_past_the_window_raises_under_overflow_error() -> None:
    """2,023 tokens: 3 for the request, 5 for each short message (4 and its word), 2,010 for
    the assistant's (4, its call's 6 and its 2,000 words of reasoning)."""
    policy = ctxwin.Policy({"context_window": 1000, "overflow": "error"}, counter=FakeCounter())
    b = body(user("go"), thinking(0, words(2000)), tool("c0", "found"))
    with pytest.raises(BudgetExceeded) as e:
        policy.apply(b, format=FMT)
    assert str(e.value) == (
        "request is 2,023 tokens after the policy ran, over the context window of 1,000 tokens "
        "(overflow: error)"
    )


def test_rounds_of_reasoning_are_dropped_down_to_the_window() -> None:
    """Twelve rounds of 400 words of reasoning (4,800) in a 2,000-token window: the oldest
    rounds go until what is sent fits, reasoning included."""
    config = {"context_window": 2000, "window": {"strategy": "threshold", "keep_rounds": 1}}
    policy = ctxwin.Policy(config, counter=FakeCounter())
    b = body(*agent_history(12, reasoning=400))
    out = policy.apply(b, format=FMT)
    sent = out.request["messages"]  # type: ignore[index]
    reasoning = sum(len(m.get("reasoning_content", "").split()) for m in sent)
    assert reasoning <= out.tokens <= 2000
    assert not out.report.over_budget


# ------------------------------------------------------------------------------ memo


def test_reasoning_content_edited_in_place_is_counted_again() -> None:
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
    b = body(*agent_history(3))
    before = tokens(b, policy)
    b["messages"][4]["reasoning_content"] += " " + words(250)
    assert tokens(b, policy) == before + 250 == tokens(b)


def test_reasoning_details_edited_in_place_deep_inside_is_counted_again() -> None:
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
    details = [{"type": "reasoning.text", "text": words(10)}]
    b = turn(("reasoning_details", details))
    before = tokens(b, policy)
    details[0]["text"] = words(90)
    assert tokens(b, policy) == before + 80 == tokens(b)


def test_an_sdk_messages_reasoning_edited_in_place_is_counted_again() -> None:
    chat = pytest.importorskip("openai.types.chat")
    message = chat.ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c0", "search", {"q": "x"})],
            "reasoning_content": words(10),
        }
    )
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=FakeCounter())
    b = body(user("go"), message, tool("c0", "found"))
    before = tokens(b, policy)
    message.reasoning_content = words(60)  # type: ignore[attr-defined]
    assert tokens(b, policy) == before + 50 == tokens(b)


def test_a_reused_policy_and_a_fresh_one_agree_on_a_growing_history() -> None:
    """The agent appends a round with its reasoning and applies again: the window clears
    and resumes across requests, and every request reads as a fresh policy reads it."""
    config = {"context_window": 3000, "window": {"strategy": "threshold", "keep_rounds": 1}}
    reused = ctxwin.Policy(config, counter=FakeCounter())
    msgs = agent_history(14, reasoning=60)
    for n in range(4, len(msgs) + 1, 2):
        b = body(*msgs[:n])
        got = reused.apply(b, format=FMT)
        fresh = ctxwin.Policy(config, counter=FakeCounter()).apply(b, format=FMT)
        assert (got.tokens, got.request) == (fresh.tokens, fresh.request)
        assert got.report.to_dict() == fresh.report.to_dict()
    bare = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in msgs]
    assert got.report.tokens_before == tokens(body(*bare)) + 14 * 60  # the reasoning is in it


def _cookbook(messages: list[dict[str, Any]], counter: ctxwin.TiktokenCounter) -> int:
    """OpenAI's own rule (the cookbook's ``num_tokens_from_messages``, which matches the
    API's ``prompt_tokens``): 3 a message, the tokens of each of its fields' values (the
    role's too), 1 more for a ``name``, 3 for the reply's priming."""
    total = 3
    for m in messages:
        total += 3 + sum(counter.count(v) + (k == "name") for k, v in m.items())
    return total


@pytest.mark.parametrize("developer", [False, True])
def test_a_chat_counts_each_message_s_role_as_openai_does(developer: bool) -> None:
    """Each message's role is a token of its own besides the three special tokens around
    it: ctxwin counted 3 a message, one token a message short of what OpenAI bills (7 for
    one "hi", 32 for OpenAI's four-message example where the API says 36; review s48-2)."""
    counter = ctxwin.TiktokenCounter("o200k_base")
    policy = ctxwin.Policy({"context_window": 1_000_000}, counter=counter)
    messages = [
        {"role": "developer" if developer else "system", "content": "You are helpful."},
        {"role": "user", "content": "What is the capital of France?", "name": "ann"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Italy?"},
    ]
    for n in range(1, len(messages) + 1):
        assert tokens(body(*messages[:n]), policy) == _cookbook(messages[:n], counter)
