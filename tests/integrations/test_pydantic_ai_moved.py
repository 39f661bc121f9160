"""A tool return repair moves to right after its call (it was recorded after a user turn
and the model's reply, which pydantic-ai's own cleaning leaves as it is, and Anthropic and
OpenAI refuse) goes out as the part it was: its outcome, files and metadata kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryImage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel

import ctxwin
from ctxwin.integrations.pydantic_ai import ContextWindow

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def history() -> list[Any]:
    shot = ["the login page", BinaryImage(data=PNG, media_type="image/png")]
    return [
        ModelRequest(parts=[UserPromptPart("Check the login page.")]),
        ModelResponse(
            parts=[
                ToolCallPart("read", {"path": "app.log"}, tool_call_id="c1"),
                ToolCallPart("screenshot", {}, tool_call_id="c2"),
            ]
        ),
        ModelRequest(parts=[UserPromptPart("hurry up")]),
        ModelResponse(parts=[TextPart("working on it")]),
        ModelRequest(
            parts=[
                ToolReturnPart("read", "PermissionError", tool_call_id="c1", outcome="failed"),
                ToolReturnPart("screenshot", shot, tool_call_id="c2", metadata={"trace": "t-1"}),
            ]
        ),
        ModelResponse(parts=[TextPart("done")]),
    ]


def test_a_moved_return_keeps_its_outcome_files_and_metadata() -> None:
    seen: list[list[Any]] = []

    def model(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("ok")])

    capability = ContextWindow(ctxwin.Policy({"context_window": 100_000}))
    agent = Agent(FunctionModel(model), capabilities=[capability])
    asyncio.run(agent.run("next", message_history=history()))  # run_sync leaves its loop open
    returns = [p for m in seen[-1] for p in m.parts if isinstance(p, ToolReturnPart)]
    got = [(p.tool_call_id, p.outcome, len(p.files), p.metadata) for p in returns]
    assert got == [("c1", "failed", 0, None), ("c2", "success", 1, {"trace": "t-1"})]
    assert capability.last_result is not None
    assert [f.code for f in capability.last_result.fixes] == ["moved_result", "moved_result"]
