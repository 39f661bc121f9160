"""The OpenAI Agents SDK filter counts for the model the run uses: a ``RunConfig.model``
replaces every agent's model in the SDK (``run_internal/turn_preparation.get_model``), and
the filter, which is not given the ``RunConfig``, is told it as ``input_filter(model=...)``.
Runs on the SDK's own ``agents.testing.ScriptedModel`` (no network)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
pytest.importorskip("agents")

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message
from openai import AsyncOpenAI

import ctxwin
from ctxwin import InputError
from ctxwin.integrations.openai_agents import InputFilter, input_filter
from tests.integrations.test_openai_agents_reasoning import THOUGHT, items


def policy() -> ctxwin.Policy:
    return ctxwin.Policy({"context_window": "auto"})


def run(filt: InputFilter) -> ctxwin.Result:
    """A run of an agent on gpt-4o whose RunConfig names another model (here the scripted
    one, which the SDK runs in place of the agent's); the filter's last result."""
    agent = Agent(name="coder", model="gpt-4o")
    scripted = ScriptedModel([[assistant_message("none yet")]])
    config = RunConfig(model=scripted, call_model_input_filter=filt)
    result = asyncio.run(Runner.run(agent, items(), run_config=config))
    assert result.final_output == "none yet"
    assert len(scripted.calls) == 1  # the run's model got the request, not the agent's
    assert filt.last_result is not None
    return filt.last_result


def test_the_run_s_model_is_counted_for_in_place_of_the_agent_s() -> None:
    """``RunConfig(model="gpt-5.6")`` runs a gpt-4o agent on gpt-5.6: its window, and its
    reading of earlier turns' reasoning, are gpt-5.6's. The filter counted for gpt-4o."""
    agent_s = run(input_filter(policy()))
    assert (agent_s.model, agent_s.limits.context_window) == ("gpt-4o", 128_000)
    run_s = run(input_filter(policy(), model="gpt-5.6"))
    assert (run_s.model, run_s.limits.context_window) == ("gpt-5.6", 400_000)
    assert run_s.report.tokens_before - agent_s.report.tokens_before >= THOUGHT


def call(filt: InputFilter) -> ctxwin.Result:
    """One model call of a gpt-4o agent through the filter, as the SDK makes it."""
    data = CallModelData(
        model_data=ModelInputData(input=items(), instructions="Code."),
        agent=Agent(name="coder", model="gpt-4o"),
        context=None,
    )
    asyncio.run(filt(data))
    assert filt.last_result is not None
    return filt.last_result


def test_a_model_object_is_counted_for_by_the_name_it_holds() -> None:
    """``RunConfig(model=OpenAIResponsesModel(model="gpt-5.6", ...))``: the same object
    given to the filter names the model the run uses."""
    client = AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9")  # never called
    model = OpenAIResponsesModel(model="gpt-5.6", openai_client=client)
    result = call(input_filter(policy(), model=model))
    assert (result.model, result.limits.context_window) == ("gpt-5.6", 400_000)


def test_a_model_object_that_names_no_model_is_not_counted_as_the_agent_s() -> None:
    """The SDK runs the run's model, whatever the agent names: a model object that says no
    name (a model of the user's own) is counted with the policy's own settings."""
    filt = input_filter(ctxwin.Policy({"context_window": 50_000}), model=ScriptedModel([]))
    result = call(filt)
    assert result.model is None
    assert result.limits.context_window == 50_000


@pytest.mark.parametrize(
    ("model", "shown"),
    [(42, "int"), ("", "an empty string"), ({"model": "gpt-5.6"}, "dict")],
)
def test_a_model_of_another_kind_is_refused_where_given(model: Any, shown: str) -> None:
    with pytest.raises(InputError) as info:
        input_filter(policy(), model=model)
    assert info.value.path == "model"
    assert str(info.value) == (
        "model: model= takes the RunConfig's model: its name (a non-empty str) or an Agents "
        f"SDK Model (or None), not {shown}"
    )


def test_the_filter_says_the_model_it_was_given() -> None:
    filt = InputFilter(policy(), model="gpt-5.6")
    assert filt.model == "gpt-5.6"
    assert InputFilter(policy()).model is None
