"""Helpers for step tests: one tool call and its result in an OpenAI-chat body."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Policy, ToolResult


def body_with_result(
    content: str, tool: str = "get_order", *, rounds_after: int = 0
) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]
    for r in range(rounds_after):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"n{r}",
                        "type": "function",
                        "function": {"name": "noop", "arguments": "{}"},
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"n{r}", "content": "ok"})
    return {"messages": msgs}


def result_text(result: ctxwin.Result, index: int = 2) -> str:
    block = result.conversation.messages[index].blocks[0]
    assert isinstance(block, ToolResult)
    return block.text


@pytest.fixture
def apply_one() -> Any:
    """apply(policy_dict, content, **kw) -> (Result, new text of the result)."""

    def run(
        config: dict[str, Any], content: str, tool: str = "get_order", **kw: Any
    ) -> tuple[ctxwin.Result, str]:
        pol = Policy(config, format="openai-chat", **kw)
        res = pol.apply(body_with_result(content, tool))
        return res, result_text(res)

    return run
