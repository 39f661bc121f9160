"""pydantic-ai thinking (``ThinkingPart``): carried back untouched, counted as the model the
request goes to reads it (compared with the body pydantic-ai's own ``AnthropicModel`` and
``OpenAIResponsesModel`` send, caught by a fake transport), and never split from its round."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("httpx2")
pytest.importorskip("anthropic")
pytest.importorskip("openai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIResponsesModel

import ctxwin
from ctxwin.integrations._pydantic_ai_map import Mapper
from ctxwin.integrations.pydantic_ai import ContextWindow, process_history
from tests.integrations.pai_wire_kit import (
    ANTHROPIC_REPLY,
    Capture,
    anthropic_model,
    openai_provider,
)

SIG = "Eq" + "A" * 1500
ENC = "gAAAAB" + "B" * 6000


def lines(i: int, n: int = 200) -> str:
    return "\n".join(f"r{i} line {k}: value_{k} = compute(order_{i})" for k in range(n))


def anthropic_parts(i: int) -> list[Any]:
    if i % 3 == 1:  # redacted thinking, as AnthropicModel records it
        return [ThinkingPart("", id="redacted_thinking", signature=SIG, provider_name="anthropic")]
    return [ThinkingPart(f"plan {i}: read it", signature=f"{SIG}{i}", provider_name="anthropic")]


def openai_parts(i: int) -> list[Any]:
    """A Responses reasoning item with two summaries: one part each, the same id."""
    first = ThinkingPart("summary one", id=f"rs_{i}", signature=f"{ENC}{i}", provider_name="openai")
    return [first, ThinkingPart("summary two", id=f"rs_{i}", provider_name="openai")]


def google_parts(i: int) -> list[Any]:
    return [ThinkingPart(f"thought {i}", signature=f"sig{i}", provider_name="google-gla")]


def history(parts: Any, turns: int = 4, provider: str = "anthropic") -> list[ModelMessage]:
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("go")])]
    for i in range(turns):
        call = ToolCallPart("read", {"i": i}, tool_call_id=f"c{i}")
        out.append(ModelResponse(parts=[*parts(i), call], provider_name=provider))
        out.append(ModelRequest(parts=[ToolReturnPart("read", lines(i), f"c{i}")]))
    return out


def run_function_model(messages: list[ModelMessage], capability: Any) -> list[ModelMessage]:
    seen: list[list[ModelMessage]] = []

    def answer(got: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(got)
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(answer), capabilities=[capability])
    asyncio.run(agent.run("next", message_history=messages))
    return seen[-1]


@pytest.mark.parametrize("parts", [anthropic_parts, openai_parts, google_parts])
def test_a_history_with_thinking_ctxwin_leaves_comes_back_as_the_very_objects(parts: Any) -> None:
    given = history(parts)
    capability = ContextWindow(ctxwin.Policy({"tokenizer": "o200k_base"}))
    sent = run_function_model(given, capability)
    responses = [m for m in given if isinstance(m, ModelResponse)]
    assert [m for m in sent if isinstance(m, ModelResponse)] == responses  # every part as it was
    assert {c.change for c in capability.last_result.edit_map.messages} == {"kept"}
    out = asyncio.run(process_history(ctxwin.Policy({"tokenizer": "o200k_base"}))(given))
    assert len(out) == len(given)
    assert all(a is b for a, b in zip(out, given, strict=True))


@pytest.mark.parametrize("parts", [anthropic_parts, openai_parts, google_parts])
def test_thinking_in_an_edited_response_is_the_same_part_in_the_same_place(parts: Any) -> None:
    """Cleared results and shortened call inputs leave the thinking parts (ids,
    signatures, provider fields) as they were, in their order."""
    given = history(parts, turns=6)
    policy = ctxwin.Policy(
        {
            "tokenizer": "o200k_base",
            "context_window": 8000,
            "window": {"trigger": 0.5, "target": 0.3, "clear_tool_inputs": True},
        }
    )
    out = asyncio.run(process_history(policy)(given))
    assert any(a is not b for a, b in zip(out, given, strict=False))
    originals = [m for m in given if isinstance(m, ModelResponse)]
    for msg in (m for m in out if isinstance(m, ModelResponse)):
        call = msg.parts[-1].tool_call_id
        original = next(o for o in originals if o.parts[-1].tool_call_id == call)
        assert [type(p) for p in msg.parts] == [type(p) for p in original.parts]
        think = [p for p in msg.parts if isinstance(p, ThinkingPart)]
        assert think
        assert all(a is b for a, b in zip(think, original.parts, strict=False))


# ------------------------------------------------------------------ counting


OPENAI_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_9",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


def openai_model(capture: Capture) -> Any:
    return OpenAIResponsesModel("gpt-5", provider=openai_provider(capture))


def counted(kind: str, messages: list[ModelMessage], prompt: str | None) -> tuple[int, int]:
    """The tokens ctxwin counts for the request (through ``ContextWindow``) and for the body
    pydantic-ai sent, read by ctxwin's adapter of that body's format."""
    if kind == "anthropic":
        capture, make, fmt = Capture(ANTHROPIC_REPLY), anthropic_model, "anthropic"
    else:
        capture, make, fmt = Capture(OPENAI_REPLY), openai_model, "openai-responses"
    capability = ContextWindow(ctxwin.Policy({"tokenizer": "o200k_base"}), observe=False)
    agent = Agent(make(capture), capabilities=[capability])
    # the fake reply does not satisfy the run: the request is what counts
    with contextlib.suppress(Exception):
        asyncio.run(agent.run(prompt, message_history=messages))
    direct = ctxwin.Policy({"tokenizer": "o200k_base"}).apply(
        capture.bodies[0], format=fmt, model=capture.bodies[0].get("model")
    )
    return capability.last_result.report.tokens_before, direct.report.tokens_before


def strip(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The same history without its thinking."""
    out: list[ModelMessage] = []
    for m in messages:
        if isinstance(m, ModelResponse):
            m = ModelResponse(parts=[p for p in m.parts if not isinstance(p, ThinkingPart)])
        out.append(m)
    return out


def thinking_tokens(kind: str, messages: list[ModelMessage], prompt: str | None) -> tuple[int, int]:
    """What the thinking of ``messages`` adds, as ctxwin counts the mapping and the body."""
    with_it = counted(kind, messages, prompt)
    without = counted(kind, strip(messages), prompt)
    return with_it[0] - without[0], with_it[1] - without[1]


def close(mapped: int, direct: int, messages: int = 0) -> bool:
    """Equal but for 2% and a few tokens (JSON keys), and the 3 tokens of each of
    ``messages`` the body has and ctxwin's mapping does not."""
    return abs(mapped - direct) <= max(8, direct // 50) + 3 * messages


def test_anthropic_thinking_counts_as_the_body_anthropic_model_sends() -> None:
    mapped, direct = thinking_tokens("anthropic", history(anthropic_parts, turns=3), "next")
    assert direct > 1000
    assert close(mapped, direct)


def test_thinking_of_another_provider_counts_as_the_text_anthropic_model_sends() -> None:
    """OpenAI's encrypted reasoning cannot go to Claude: pydantic-ai sends its summaries as
    framed text (in a user message of its own, for Claude), and ctxwin counted the 6,000
    encrypted characters of each item too."""
    given = history(openai_parts, turns=3, provider="openai")
    mapped, direct = thinking_tokens("anthropic", given, "next")
    assert direct > 0
    assert close(mapped, direct, messages=3)


def test_openai_reasoning_of_the_current_turn_counts_its_encrypted_content_only() -> None:
    """A tool loop (no new user message): OpenAI reads each reasoning item by its encrypted
    content (one token per 7 characters past 764), not its summaries; ctxwin counted the
    encrypted text at one token per 4 characters, plus the summaries."""
    given = history(openai_parts, turns=3, provider="openai")
    mapped, direct = thinking_tokens("openai", given, None)
    assert direct > 1000
    assert close(mapped, direct)


def test_openai_reasoning_of_earlier_turns_counts_nothing() -> None:
    """gpt-5 reads the reasoning of the current turn only (no ``reasoning.context`` sent):
    after a new user message the earlier items count nothing."""
    given = history(openai_parts, turns=3, provider="openai")
    mapped, direct = thinking_tokens("openai", given, "next")
    assert direct == 0
    assert close(mapped, direct)


# ------------------------------------------------------------------ drops


def tool_loop(parts: Any, turns: int = 8) -> list[ModelMessage]:
    """One user turn of tool calls, each response only thinking and a call."""
    return history(parts, turns=turns)


def dropped(given: list[ModelMessage], clear_reasoning: bool) -> list[ModelMessage]:
    policy = ctxwin.Policy(
        {
            "tokenizer": "o200k_base",
            "context_window": 7000,
            "window": {"trigger": 0.5, "target": 0.3, "clear_reasoning": clear_reasoning},
        }
    )
    processor = process_history(policy)
    out = asyncio.run(processor(given))
    assert processor.last_result is not None
    assert any(e.step == "drop" for e in processor.last_result.report.edits)
    return out


@pytest.mark.parametrize("clear_reasoning", [False, True])
def test_a_dropped_round_of_thinking_and_a_call_leaves_no_empty_response_nor_orphan(
    clear_reasoning: bool,
) -> None:
    given = tool_loop(anthropic_parts)
    out = dropped(given, clear_reasoning)
    assert len(out) < len(given)
    assert all(m.parts for m in out)
    calls = {p.tool_call_id for m in out for p in m.parts if isinstance(p, ToolCallPart)}
    returns = {p.tool_call_id for m in out for p in m.parts if isinstance(p, ToolReturnPart)}
    assert calls == returns
    assert ctxwin.check(Mapper().request(out).body, "anthropic") == []


@pytest.mark.parametrize("clear_reasoning", [False, True])
def test_the_thinking_of_the_turn_in_progress_is_never_removed(clear_reasoning: bool) -> None:
    """Claude wants the turn's first assistant message, with its signed thinking, back with
    the tool results: drops keep it, and every kept response keeps its thinking whole."""
    given = tool_loop(anthropic_parts)
    out = dropped(given, clear_reasoning)
    responses = [m for m in out if isinstance(m, ModelResponse)]
    assert responses[0].parts[0] is given[1].parts[0]  # the turn opener, signed
    assert responses[-1] is given[-2]  # the latest round, untouched
    for msg in responses:
        original = next(
            o for o in given if isinstance(o, ModelResponse) and o.parts[-1] is msg.parts[-1]
        )
        assert msg.parts == original.parts


@pytest.mark.parametrize("sealed", [20, 64, 65, 300])
def test_a_short_encrypted_reasoning_item_counts_what_openai_reads(sealed: int) -> None:
    """An item of at most 64 sealed tokens (up to about 1,200 encrypted characters) was
    counted as a fixed 11 tokens: its stand-in string was empty (65 and 300: guards)."""

    def parts(i: int) -> list[Any]:
        encrypted = "g" * (764 + 7 * sealed)
        return [ThinkingPart("", id=f"rs_{i}", signature=encrypted, provider_name="openai")]

    mapped, direct = thinking_tokens("openai", history(parts, turns=3, provider="openai"), None)
    assert direct >= 3 * sealed
    assert abs(mapped - direct) <= 3 * 10  # each stand-in's keys: a few tokens an item
