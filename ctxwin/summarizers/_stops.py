"""How providers say an answer stopped unfinished: one table, read by the Anthropic and OpenAI
summarizers in their SDKs' answers and by the LangChain summarizer in the
``response_metadata`` of any provider's chat model, so that they refuse the same answers."""

from __future__ import annotations

from typing import Literal

__all__ = ["ANTHROPIC_STOPS", "FINISH_REASONS", "METADATA_STOPS", "WHY", "Unfinished", "unfinished"]

Unfinished = Literal["cut", "window", "paused", "refused", "filtered", "failed"]
"""Why the text that came, if any, is no finished summary."""

WHY: dict[Unfinished, str] = {
    "cut": "the summary was cut at the model's output limit",
    "window": "the summary was cut at the model's context window",
    "paused": "the model paused its turn before finishing",
    "refused": "the model refused",
    "filtered": "the answer was filtered",
    "failed": "the model stopped before finishing",
}
"""What a summarizer's error says for each."""

ANTHROPIC_STOPS: dict[str, Unfinished] = {
    "max_tokens": "cut",
    "model_context_window_exceeded": "window",
    "pause_turn": "paused",  # a server tool's long turn: the answer goes on in a next request
    "refusal": "refused",
}
"""Anthropic's ``stop_reason`` (the Messages API; ChatAnthropic's and ChatBedrock's
metadata). ``tool_use`` is read apart: a tool call is no summary either, said otherwise."""

FINISH_REASONS: dict[str, Unfinished] = {
    # OpenAI, Azure and the servers compatible with them (Groq, DeepSeek, vLLM...)
    "length": "cut",
    "content_filter": "filtered",
    # Mistral: the context window reached, or the generation broken off
    "model_length": "window",
    "error": "failed",
    # Gemini (langchain-google-genai: the FinishReason's name, lowercased here)
    "max_tokens": "cut",
    "safety": "filtered",
    "recitation": "filtered",
    "language": "filtered",
    "blocklist": "filtered",
    "prohibited_content": "filtered",
    "spii": "filtered",
    "image_safety": "filtered",
    "image_prohibited_content": "filtered",
    "image_recitation": "filtered",
    "other": "failed",
    "image_other": "failed",
    "malformed_function_call": "failed",
    "unexpected_tool_call": "failed",
    "too_many_tool_calls": "failed",
}
"""``finish_reason`` values (lowercased) after which the text is no finished summary."""

METADATA_STOPS: dict[str, dict[str, Unfinished]] = {
    "finish_reason": FINISH_REASONS,  # OpenAI, Mistral, Gemini...
    "stop_reason": ANTHROPIC_STOPS,  # Anthropic
    "stopReason": {  # Bedrock Converse
        "max_tokens": "cut",
        "model_context_window_exceeded": "window",
        "content_filtered": "filtered",
        "guardrail_intervened": "filtered",
        "malformed_model_output": "failed",
    },
    "done_reason": {"length": "cut"},  # Ollama
}
"""The same, by the ``response_metadata`` key LangChain's chat models put them under."""


def unfinished(table: dict[str, Unfinished], reason: object) -> Unfinished | None:
    """Why an answer that stopped for ``reason`` (any case) is unfinished, None when it is
    not (or ``reason`` is no text)."""
    return table.get(reason.lower()) if isinstance(reason, str) else None
