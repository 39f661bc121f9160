"""What an OpenAI reasoning item costs: its encrypted reasoning, at the rate Codex CLI's own
counts show (``ENCRYPTED_REASONING``), and nothing for its summary."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin.formats.openai_responses import ENCRYPTED_REASONING
from tests.builders import sealed


def _tokens(body: dict[str, Any]) -> int:
    return ctxwin.Policy({"context_window": 1_000_000}).apply(body).tokens


def _with(item: dict[str, Any]) -> dict[str, Any]:
    return {"input": [{"role": "user", "content": "go"}, item]}


def test_encrypted_reasoning_costs_one_token_per_seven_characters_past_the_fixed_part() -> None:
    fixed, per = ENCRYPTED_REASONING.fixed, ENCRYPTED_REASONING.per
    bare = _tokens({"input": [{"role": "user", "content": "go"}]})
    for tokens in (0, 9, 450, 3000):
        item = {"type": "reasoning", "summary": [], "encrypted_content": sealed(tokens)}
        assert _tokens(_with(item)) - bare == tokens + 3  # and the item's message overhead
    short = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA" + "x" * (fixed // 2)}
    assert _tokens(_with(short)) - bare == 3
    assert per == 7


def test_a_reasoning_items_summary_is_not_counted_when_it_carries_its_reasoning() -> None:
    summary = [{"type": "summary_text", "text": "I looked at the tests first. " * 40}]
    plain = {"type": "reasoning", "summary": [], "encrypted_content": sealed(200)}
    told = {**plain, "summary": summary}
    assert _tokens(_with(told)) == _tokens(_with(plain))
    # without encrypted reasoning, the item is counted as it reads (its summary with it)
    bare = {"type": "reasoning", "summary": summary}
    assert _tokens(_with(bare)) > _tokens(_with({"type": "reasoning", "summary": []})) + 200


def test_other_formats_count_opaque_blobs_as_before() -> None:
    """Anthropic's thinking signature is still one token per four characters."""

    def body(signature: str) -> dict[str, Any]:
        thinking = {"type": "thinking", "thinking": "Look.", "signature": signature}
        return {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [thinking, {"type": "text", "text": "ok"}]},
                {"role": "user", "content": "more"},
            ],
        }

    assert _tokens(body("s" * 8000)) - _tokens(body("s" * 4000)) == 1000
