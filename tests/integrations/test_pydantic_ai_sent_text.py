"""Parts pydantic-ai sends to the model as text are counted: an instruction change (sent
as a ``<pyai:context>`` element) and a user's speech (sent as its transcript)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    InstructionDeltaPart,
    ModelRequest,
    ModelResponse,
    SpeechPart,
    TextPart,
    UserPromptPart,
)

import ctxwin
from ctxwin.integrations.pydantic_ai import process_history
from ctxwin.testing import FakeCounter

WORDS = " ".join(f"rule{i}" for i in range(400))


def tokens(parts: list[Any]) -> int:
    processor = process_history(ctxwin.Policy({}, counter=FakeCounter()))
    history = [
        ModelRequest(parts=[UserPromptPart("start")]),
        ModelResponse(parts=[TextPart("ok")]),
        ModelRequest(parts=[UserPromptPart("go on"), *parts]),
    ]
    asyncio.run(processor(history))
    assert processor.last_result is not None
    return processor.last_result.report.tokens_before


def test_an_instruction_change_counts_as_the_text_sent() -> None:
    change = InstructionDeltaPart(id="paths", content=WORDS)
    assert tokens([change]) - tokens([]) >= 400


def test_a_users_speech_counts_as_its_transcript() -> None:
    speech = SpeechPart(speaker="user", transcript=WORDS)
    assert tokens([speech]) - tokens([]) >= 400
