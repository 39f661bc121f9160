"""A pydantic-ai agent whose model requests ctxwin edits (offline: a FunctionModel).

python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import asyncio
import json

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow

TURNS = 8


def fake_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls search_code TURNS times, then answers."""
    done = sum(isinstance(m, ModelResponse) for m in messages)
    if done == TURNS:
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("search_code", {"query": f"q{done}"})])


def main() -> None:
    policy = ctxwin.load_policy("examples/policy")
    capability = ContextWindow(policy)
    agent = Agent(FunctionModel(fake_model), capabilities=[capability])

    @agent.tool_plain
    def search_code(query: str) -> str:
        """Search the code base."""
        hits = [
            {"path": f"src/{query}/{i}.py", "line": i, "text": "x = 1 " * 40} for i in range(80)
        ]
        return json.dumps({"matches": hits})

    result = asyncio.run(agent.run("Find the bug."))
    report = capability.last_result.report
    print(f"last request: {report.tokens_before} -> {report.tokens_after} tokens")
    whole = sum(
        len(str(p.content))
        for m in result.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    )
    print(f"the run's history still holds {whole} characters")


if __name__ == "__main__":
    main()
