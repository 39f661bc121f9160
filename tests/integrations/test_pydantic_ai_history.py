"""pydantic-ai: a history changed in place between two requests of one processor (a dict
tool return or a list of prompt items mutated, a call id renamed, ctxwin's own copy edited
by the user) is sent as a fresh processor sends it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    ImageUrl,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

import ctxwin
from ctxwin.integrations.pydantic_ai import process_history

POLICY = {
    "context_window": 6000,
    "tokenizer": "o200k_base",
    "window": {"strategy": "threshold", "trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {"*": {"max_tokens": 800}},
}


def hits(query: str) -> dict[str, Any]:
    found = [{"path": f"src/{query}/{i}.py", "line": i, "text": f"def f_{i}(x)"} for i in range(80)]
    return {"query": query, "hits": found}


def history() -> list[Any]:
    prompt = UserPromptPart(["Find the bug.", ImageUrl(url="https://x.test/m.png")])
    out: list[Any] = [ModelRequest(parts=[prompt])]
    for i in range(6):
        call = ToolCallPart("search", {"query": f"q{i}"}, tool_call_id=f"c{i}")
        out.append(ModelResponse(parts=[call]))
        out.append(ModelRequest(parts=[ToolReturnPart("search", hits(f"q{i}"), f"c{i}")]))
    return out


def sent(processor: Any, messages: list[Any]) -> Any:
    asyncio.run(processor(messages))
    return processor.last_result.request


def fresh(messages: list[Any]) -> Any:
    return sent(process_history(ctxwin.Policy(POLICY)), messages)


def result_dict_mutated(messages: list[Any]) -> None:
    messages[-1].parts[0].content["hits"] = []


def earlier_result_dict_mutated(messages: list[Any]) -> None:
    del messages[-3].parts[0].content["hits"][3:]  # under its cap now


def prompt_items_appended(messages: list[Any]) -> None:
    messages[0].parts[0].content.append("And also: " + "more " * 2000)


def result_call_id_renamed(messages: list[Any]) -> None:
    messages[4].parts[0].tool_call_id = "elsewhere"  # an orphan now; c1 has no result


@pytest.mark.parametrize(
    "change",
    [
        result_dict_mutated,
        earlier_result_dict_mutated,
        prompt_items_appended,
        result_call_id_renamed,
    ],
)
def test_a_history_changed_in_place_is_sent_as_a_fresh_processor_sends_it(
    change: Callable[[list[Any]], None],
) -> None:
    processor = process_history(ctxwin.Policy(POLICY))
    messages = history()
    before = sent(processor, messages)
    change(messages)
    after = sent(processor, messages)
    assert after == fresh(messages)
    assert after != before


def test_a_copy_ctxwin_made_and_the_user_edited_is_sent_as_edited() -> None:
    """``process_history``'s output is the run's history: a message of it ctxwin edited
    (a copy) and the user then changed in place is sent with the user's change, not as
    the original it was copied from."""
    processor = process_history(ctxwin.Policy(POLICY))
    persisted = asyncio.run(processor(history()))
    copied = [m for m, o in zip(persisted, history(), strict=True) if m != o]
    assert copied, "ctxwin edited some messages"
    copy = copied[-1]
    copy.parts[0] = dataclasses.replace(copy.parts[0], content="NOTE FROM THE USER")
    request = sent(processor, persisted)
    assert "NOTE FROM THE USER" in str(request)
    assert "NOTE FROM THE USER" in str(fresh(persisted))


def test_what_comes_before_a_compaction_is_not_counted_and_is_handed_back() -> None:
    """A provider's compaction (a ``CompactionPart`` in a response): pydantic-ai sends only
    what follows it, and ctxwin counted the whole history, 28,123 tokens for a request of
    about 1,700, and cleared results the model needed to get under its window (review)."""
    from pydantic_ai.messages import CompactionPart, TextPart, UserPromptPart

    long = "old discussion about the project " * 400
    history: list[Any] = []
    for i in range(6):
        history += [
            ModelRequest(parts=[UserPromptPart(f"q{i} " + long)]),
            ModelResponse(parts=[TextPart(f"a{i} " + long)]),
        ]
    summary = CompactionPart(content="SUMMARY of everything so far", provider_name="anthropic")
    history += [
        ModelRequest(parts=[UserPromptPart("continue")]),
        ModelResponse(parts=[summary, TextPart("ok")], provider_name="anthropic"),
        ModelRequest(parts=[UserPromptPart("next question")]),
    ]
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from ctxwin.integrations._pydantic_ai_map import Mapper
    from ctxwin.integrations._pydantic_ai_parts import reader_of

    claude = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(api_key="x"))
    other = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("x")]))
    assert Mapper().request(history, reader=reader_of(other)).before == ()  # sends it all
    # pydantic-ai cuts only at a compaction it can send back, with its summary (review)
    for foreign in (
        CompactionPart(content="SUMMARY", provider_name="openai"),
        CompactionPart(content="", provider_name="anthropic"),
    ):
        cut = [*history[:13], ModelResponse(parts=[foreign, TextPart("ok")]), history[-1]]
        assert Mapper().request(cut, reader=reader_of(claude)).before == ()
    policy = ctxwin.load_policy({"context_window": 16_000})
    mapper = Mapper()
    request = mapper.request(history, reader=reader_of(claude))
    assert request.before == tuple(history[:13])
    result = policy.apply(request.body, format="anthropic")
    assert result.report.tokens_before < policy.counter.count(long)  # none of the old ones
    out = mapper.apply(request, result)
    assert all(a is b for a, b in zip(out[:13], history, strict=False))  # handed back
    assert out[-2:] == history[-2:]


def test_an_application_s_summary_in_a_request_is_counted_as_sent() -> None:
    """A summary the application wrote (a ``CompactionPart`` in a request) is sent as user
    text, the messages before it too; ctxwin counted nothing of it: 16 tokens for a request
    of 16,720 characters."""
    from pydantic_ai.messages import CompactionPart, TextPart, UserPromptPart

    from ctxwin.integrations._pydantic_ai_map import Mapper

    summary = "The user and the agent discussed the parser at length. " * 300
    history = [
        ModelRequest(parts=[UserPromptPart("old " * 5000)]),
        ModelResponse(parts=[TextPart("old answer")]),
        ModelRequest(parts=[CompactionPart(content=summary)]),
        ModelResponse(parts=[TextPart("ok")]),
        ModelRequest(parts=[UserPromptPart("next")]),
    ]
    policy = ctxwin.load_policy({"context_window": 100_000})
    request = Mapper().request(history)
    assert request.before == ()  # nothing cut: pydantic-ai sends what came before too
    tokens = policy.apply(request.body, format="anthropic").report.tokens_before
    before = policy.counter.count(summary) + policy.counter.count("old " * 5000)
    assert before <= tokens < before + 200
