"""An OpenAI Agents SDK agent whose model input ctxwin edits (offline: a fake Model).

python examples/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import ctxwin
from ctxwin.integrations.openai_agents import input_filter

TURNS = 8


class FakeModel(Model):
    """Calls search_code TURNS times, then answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.calls += 1
        if self.calls > TURNS:
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            out: Any = ResponseOutputMessage(
                id="m", content=[text], role="assistant", status="completed", type="message"
            )
        else:
            out = ResponseFunctionToolCall(
                call_id=f"c{self.calls}",
                name="search_code",
                arguments=json.dumps({"query": f"q{self.calls}"}),
                type="function_call",
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=f"r{self.calls}")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool
def search_code(query: str) -> str:
    """Search the code base."""
    hits = [{"path": f"src/{query}/{i}.py", "line": i, "text": "x = 1 " * 40} for i in range(80)]
    return json.dumps({"matches": hits})


def main() -> None:
    policy = ctxwin.load_policy("examples/policy")
    agent = Agent(name="coder", model=FakeModel(), tools=[search_code])

    filt = input_filter(policy)
    config = RunConfig(call_model_input_filter=filt, tracing_disabled=True)
    result = asyncio.run(Runner.run(agent, "Find the bug.", run_config=config, max_turns=20))

    report = filt.last_result.report
    print(f"last model call: {report.tokens_before} -> {report.tokens_after} tokens")
    print(f"the run's items still hold {len(json.dumps(result.to_input_list()))} characters")


if __name__ == "__main__":
    main()
