"""pydantic-ai: a tool return kept as the object the tool returned (a pydantic model, a
dataclass) and changed in place between two requests is read again, as a fresh
``ContextWindow`` or processor reads it; one pydantic-ai cannot send (no JSON form) is an
:class:`~ctxwin.InputError` naming the part."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_core import PydanticSerializationError

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow, process_history

POLICY = {
    "context_window": 100_000,
    "tokenizer": "o200k_base",
    "tools": {"lookup": {"max_tokens": 120}},
}


class Customer(BaseModel):
    name: str
    email: str


class Lookup(BaseModel):
    customers: list[Customer]


@dataclass
class Row:
    name: str
    email: str


@dataclass
class Table:
    rows: list[Row]


def lookup_model() -> Lookup:
    return Lookup(customers=[Customer(name=f"user{i}", email=f"user{i}@x.test") for i in range(40)])


def lookup_dataclass() -> Table:
    return Table(rows=[Row(name=f"user{i}", email=f"user{i}@x.test") for i in range(40)])


def history(value: object) -> list[ModelMessage]:
    prompt = UserPromptPart(["find acme", ImageUrl(url="https://x.test/a.png")])
    return [
        ModelRequest(parts=[prompt]),
        ModelResponse(parts=[ToolCallPart("lookup", {"q": "acme"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("lookup", value, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("found them")]),
    ]


def redact_nested(messages: list[ModelMessage]) -> None:
    for row in getattr(messages[2].parts[0].content, "customers", None) or (
        messages[2].parts[0].content.rows
    ):
        row.email = "[redacted]"


def reassign_top_field(messages: list[ModelMessage]) -> None:
    content = messages[2].parts[0].content
    if isinstance(content, Lookup):
        content.customers = [Customer(name="only", email="[redacted]")]
    else:
        content.rows = [Row(name="only", email="[redacted]")]


def image_moved(messages: list[ModelMessage]) -> None:
    messages[0].parts[0].content[1].url = "https://x.test/b.png"


def sent_by_processor(processor: Any, messages: list[ModelMessage]) -> Any:
    asyncio.run(processor(messages))
    return processor.last_result.request


@pytest.mark.parametrize("make", [lookup_model, lookup_dataclass])
@pytest.mark.parametrize("change", [redact_nested, reassign_top_field, image_moved])
def test_a_returned_object_changed_in_place_is_read_again_by_a_history_processor(
    make: Callable[[], object], change: Callable[[list[ModelMessage]], None]
) -> None:
    processor = process_history(ctxwin.Policy(POLICY))
    messages = history(make())
    before = sent_by_processor(processor, messages)
    change(messages)
    after = sent_by_processor(processor, messages)
    fresh = sent_by_processor(process_history(ctxwin.Policy(POLICY)), copy.deepcopy(messages))
    assert after == fresh
    assert after != before


def run_seen(capability: Any, messages: list[ModelMessage]) -> str:
    """What ``FunctionModel`` was sent of the lookup's return in a run over ``messages``."""
    seen: list[str] = []

    def answer(got: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts = [p for m in got if isinstance(m, ModelRequest) for p in m.parts]
        seen.append(next(p for p in parts if isinstance(p, ToolReturnPart)).model_response_str())
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(answer), capabilities=[capability])
    asyncio.run(agent.run("next", message_history=messages))
    return seen[0]


@pytest.mark.parametrize("make", [lookup_model, lookup_dataclass])
def test_a_redacted_model_return_reaches_the_model_redacted(make: Callable[[], object]) -> None:
    """The same ``ContextWindow`` caps the return (an edited copy): made again from the
    redacted object, not from the text it read before the redaction."""
    capability = ContextWindow(ctxwin.Policy(POLICY), observe=False)
    messages = history(make())
    assert "user0@x.test" in run_seen(capability, messages)
    redact_nested(messages)
    sent = run_seen(capability, messages)
    assert "@x.test" not in sent
    assert "[redacted]" in sent
    assert sent == run_seen(ContextWindow(ctxwin.Policy(POLICY), observe=False), messages)


# ------------------------------------------------------------------ no JSON form


class Opaque:
    """An object pydantic cannot serialize."""


def deep(levels: int) -> Any:
    return json.loads("[" * levels + "]" * levels)


@pytest.mark.parametrize(
    ("value", "why"),
    [(Opaque(), "Unable to serialize unknown type"), (deep(900), "depth exceeded")],
)
def test_a_return_pydantic_ai_cannot_serialize_is_an_input_error_naming_its_part(
    value: object, why: str
) -> None:
    """pydantic-ai itself refuses to send it (``model_response_str`` raises): ctxwin says
    where it is instead of raising pydantic's error from inside."""
    messages = history("fine")
    messages.insert(3, ModelResponse(parts=[ToolCallPart("lookup", {}, tool_call_id="c2")]))
    messages.insert(4, ModelRequest(parts=[ToolReturnPart("lookup", value, tool_call_id="c2")]))
    with pytest.raises(PydanticSerializationError, match=why):
        messages[4].parts[0].model_response_str()
    with pytest.raises(ctxwin.InputError) as raised:
        asyncio.run(process_history(ctxwin.Policy(POLICY))(messages))
    error = raised.value
    assert error.path == "messages[4].parts[0]"
    assert "tool return of call 'c2' (lookup)" in str(error)
    assert why in str(error)


def compacted_history(last: ModelMessage) -> list[ModelMessage]:
    """A run whose messages hold an Anthropic compaction (at 3): pydantic-ai sends only what
    follows it; ``last`` ends the run."""
    from pydantic_ai.messages import CompactionPart

    summary = CompactionPart(content="summary of all so far", provider_name="anthropic")
    return [
        ModelRequest(parts=[UserPromptPart("task one")]),
        ModelResponse(parts=[TextPart("done one")]),
        ModelRequest(parts=[UserPromptPart("task two")]),
        ModelResponse(parts=[summary]),
        ModelRequest(parts=[UserPromptPart("task three")]),
        ModelResponse(parts=[ToolCallPart("lookup", {"q": 1}, tool_call_id="c1")]),
        last,
    ]


def run_claude(messages: list[ModelMessage], instructions: str | None = None) -> None:
    from tests.integrations.pai_wire_kit import ANTHROPIC_REPLY, Capture, anthropic_model

    capture = Capture(ANTHROPIC_REPLY)
    window = ContextWindow(ctxwin.Policy(POLICY))
    agent = Agent(anthropic_model(capture), instructions=instructions, capabilities=[window])
    asyncio.run(agent.run(None, message_history=messages))
    assert capture.bodies == []  # never sent


def test_after_a_compaction_an_unsendable_return_is_named_by_its_place_in_the_run() -> None:
    """The path counted from the compaction pydantic-ai replays from: messages[3] for the
    run's messages[6]."""
    messages = compacted_history(ModelRequest(parts=[ToolReturnPart("lookup", Opaque(), "c1")]))
    with pytest.raises(ctxwin.InputError) as raised:
        run_claude(messages)
    assert raised.value.path == "messages[6].parts[0]"


def test_an_error_in_the_body_names_the_run_s_message_and_part() -> None:
    """An error the policy raises on the body ctxwin built names that body's message and
    block: for an OpenAI model the body begins with the instructions, after a compaction it
    begins there. It names the run's message and its part instead."""
    from pydantic_ai.models.openai import OpenAIChatModel

    from tests.integrations.pai_wire_kit import Capture, openai_provider

    bad = ModelResponse(parts=[TextPart("let me look"), ToolCallPart(7, {}, tool_call_id="c2")])  # type: ignore[arg-type]
    messages = [*compacted_history(ModelRequest(parts=[ToolReturnPart("lookup", "x", "c1")]))]
    messages.append(bad)
    with pytest.raises(ctxwin.FormatError) as raised:
        run_claude(messages, instructions="Be brief.")
    assert raised.value.path == "messages[7].parts[1]"
    assert str(raised.value) == "messages[7].parts[1]: a tool_use block needs a string 'name'"
    capture = Capture({})
    model = OpenAIChatModel("gpt-4o", provider=openai_provider(capture))
    agent = Agent(
        model, instructions="Be brief.", capabilities=[ContextWindow(ctxwin.Policy(POLICY))]
    )
    with pytest.raises(ctxwin.FormatError) as raised:
        asyncio.run(agent.run(None, message_history=messages[4:]))
    assert raised.value.path == "messages[3].parts[1]"
    assert capture.bodies == []
    with pytest.raises(ctxwin.FormatError) as raised:
        asyncio.run(process_history(ctxwin.Policy(POLICY))(messages[4:]))
    assert raised.value.path == "messages[3].parts[1]"


@pytest.mark.parametrize(
    ("raised", "named"),
    [
        ("messages[0].content[0]", "instructions"),
        ("messages[2].content[0].text", "messages[1].parts[0]"),
        ("messages[2].role", "messages[1]"),
        ("tools[0]", "tools[0]"),
    ],
)
def test_an_error_a_step_raises_names_the_run_s_message(raised: str, named: str) -> None:
    """A step of the user's own that raises at the body's message: an OpenAI model's body
    begins with the instructions, which are no message of the run."""
    from pydantic_ai.models.openai import OpenAIChatModel

    from tests.integrations.pai_wire_kit import Capture, openai_provider

    def refuse(conv: Any, ctx: Any) -> Any:
        raise ctxwin.InputError("refused", path=raised)

    policy = ctxwin.Policy(POLICY, steps=[refuse])
    model = OpenAIChatModel("gpt-4o", provider=openai_provider(Capture({})))
    agent = Agent(model, instructions="Be brief.", capabilities=[ContextWindow(policy)])
    with pytest.raises(ctxwin.InputError) as error:
        asyncio.run(agent.run(None, message_history=history("fine")))
    assert error.value.path == named
    assert str(error.value) == f"{named}: refused"
