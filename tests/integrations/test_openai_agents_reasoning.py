"""The OpenAI Agents SDK filter counts earlier turns' reasoning as the agent's requests ask
the provider to read it: the policy sees the reasoning settings the SDK resolves for the
agent (``model_settings.reasoning``, the run's overriding), on the SDK's own
``agents.testing.ScriptedModel`` (no network)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
pytest.importorskip("agents")

from agents import Agent, ModelSettings, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message
from openai.types.shared import Reasoning

import ctxwin
from ctxwin import InputError
from ctxwin.integrations.openai_agents import InputFilter, input_filter
from tests.builders import sealed

THOUGHT = 800
"""Input tokens of the earlier turn's reasoning item."""
CURRENT = Reasoning(context="current_turn")


def items() -> list[dict[str, Any]]:
    """A turn whose reasoning the provider drops or reads, then the user's next message."""
    return [
        {"role": "user", "content": "what is in the repo?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed(THOUGHT)},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "a parser", "annotations": []}],
        },
        {"role": "user", "content": "and the tests?"},
    ]


def run(agent: Agent[Any], config: RunConfig) -> tuple[int, ScriptedModel]:
    """Tokens the policy counted for the request, and the model that got it."""
    model = ScriptedModel([[assistant_message("none yet")]])
    config.model = model  # the agent keeps its model name (gpt-5.6): what the filter reads
    result = asyncio.run(Runner.run(agent, items(), run_config=config))
    assert result.final_output == "none yet"
    filt = config.call_model_input_filter
    assert isinstance(filt, InputFilter)
    assert filt.last_result is not None
    return filt.last_result.report.tokens_before, model


def agent(**settings: Any) -> Agent[Any]:
    return Agent(name="coder", model="gpt-5.6", model_settings=ModelSettings(**settings))


def test_the_agent_s_current_turn_setting_leaves_earlier_reasoning_uncounted() -> None:
    """The filter handed the policy no reasoning settings: with gpt-5.6 it counted the
    earlier turn's reasoning, which the provider drops for current_turn."""
    policy = ctxwin.Policy({})
    read, _ = run(agent(), RunConfig(call_model_input_filter=input_filter(policy)))
    dropped, model = run(
        agent(reasoning=CURRENT), RunConfig(call_model_input_filter=input_filter(policy))
    )
    assert read - dropped >= THOUGHT
    (sent,) = model.calls
    assert sent.model_settings.reasoning == CURRENT  # the SDK sends its own settings
    assert sent.input == items()  # the items as they came, the settings not among them


def test_all_turns_keeps_earlier_reasoning_counted_on_a_model_that_drops_it() -> None:
    policy = ctxwin.Policy({})

    def tokens(reasoning: Reasoning | None) -> int:
        bot = Agent(name="coder", model="gpt-5", model_settings=ModelSettings(reasoning=reasoning))
        return run(bot, RunConfig(call_model_input_filter=input_filter(policy)))[0]

    assert tokens(Reasoning(context="all_turns")) - tokens(None) >= THOUGHT


def test_the_run_s_settings_override_the_agent_s_as_the_sdk_resolves_them() -> None:
    policy = ctxwin.Policy({})
    run_settings = ModelSettings(reasoning=CURRENT)
    told, model = run(
        agent(reasoning=Reasoning(context="all_turns")),
        RunConfig(
            model_settings=run_settings,
            call_model_input_filter=input_filter(policy, model_settings=run_settings),
        ),
    )
    (sent,) = model.calls
    assert sent.model_settings.reasoning == CURRENT  # what the SDK resolved and sent
    untold, _ = run(
        agent(reasoning=Reasoning(context="all_turns")),
        RunConfig(call_model_input_filter=input_filter(policy)),
    )
    assert untold - told >= THOUGHT


def test_the_reasoning_settings_do_not_go_back_to_the_sdk() -> None:
    """The filter returns the input and instructions only: the body's reasoning is the
    policy's to count with."""
    from agents.run_config import CallModelData, ModelInputData

    filt = input_filter(ctxwin.Policy({}))
    data = CallModelData(
        model_data=ModelInputData(input=items(), instructions="Code."),
        agent=agent(reasoning=CURRENT),
        context=None,
    )
    out = asyncio.run(filt(data))
    assert out.instructions == "Code."
    assert [i.get("type") for i in out.input] == [None, "reasoning", "message", None]
    assert filt.last_result is not None
    assert filt.last_result.request["reasoning"] == {"context": "current_turn"}  # type: ignore[index]


def test_model_settings_of_another_type_are_refused_where_given() -> None:
    with pytest.raises(InputError) as info:
        input_filter(ctxwin.Policy({}), model_settings={"reasoning": {"context": "all_turns"}})
    assert info.value.path == "model_settings"
    assert str(info.value) == (
        "model_settings: model_settings= takes the RunConfig's ModelSettings (or None), not dict"
    )


def test_an_agent_without_a_model_is_counted_for_the_sdk_s_default_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent with no model runs on the SDK's default (``OPENAI_DEFAULT_MODEL``): its
    profile applies (a gpt-5.6 reads every turn's reasoning), not none at all."""
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "gpt-5.6")
    filt = input_filter(ctxwin.Policy({}))
    model = ScriptedModel([[assistant_message("none yet")]])
    bare = Agent(name="coder", model=model)
    bare.model = None  # as an agent built without one: the SDK picks its default
    config = RunConfig(model=model, call_model_input_filter=filt)
    asyncio.run(Runner.run(bare, items(), run_config=config))
    assert filt.last_result is not None
    assert filt.last_result.model == "gpt-5.6"
    default_turns, _ = run(
        agent(), RunConfig(call_model_input_filter=input_filter(ctxwin.Policy({})))
    )
    assert filt.last_result.report.tokens_before == default_turns


def test_the_sdk_s_placeholder_ids_tie_nothing_so_reasoning_is_cleared() -> None:
    """On LitellmModel (any model without item ids) the SDK stamps every item with
    ``"__fake_id__"`` and ignores it itself; ctxwin read it as an item id tying each call
    to its reasoning, so ``clear_reasoning: true`` cleared none (6 of 6 reasoning items
    sent, against 2 of 6 without the ids; review)."""
    from agents.models.fake_id import FAKE_RESPONSES_ID
    from agents.run_config import CallModelData, ModelInputData

    def history(ids: dict[str, str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
        for n in range(1, 7):
            summary = [{"type": "summary_text", "text": f"think {n} " * 200}]
            call = {"type": "function_call", "call_id": f"toolu_{n}", "name": "read"}
            out += [
                {"type": "reasoning", "summary": summary, **ids},
                {**call, "arguments": "{}", **ids},
                {"type": "function_call_output", "call_id": f"toolu_{n}", "output": "row\n" * 400},
            ]
        return out

    window = {"strategy": "threshold", "trigger": 0.6, "target": 0.3, "keep_rounds": 1}
    policy = {"context_window": 6000, "window": {**window, "clear_reasoning": True}}
    coder = Agent(name="a", instructions="A.", model="litellm/anthropic/claude-sonnet-4-5")
    sent = []
    for ids in ({}, {"id": FAKE_RESPONSES_ID}):
        filt = input_filter(ctxwin.Policy(policy))
        data = ModelInputData(input=history(ids), instructions="A.")
        out = asyncio.run(filt(CallModelData(model_data=data, agent=coder, context=None)))
        sent.append(sum(item.get("type") == "reasoning" for item in out.input))
    assert sent == [2, 2]
