"""Helpers for step tests: one tool call and its result in an OpenAI-chat body."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Policy, ToolResult
from tests.builders import asst, call, tool, user


def body_with_result(
    content: str, tool_name: str = "get_order", *, rounds_after: int = 0
) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [user("go"), asst(call("c1", tool_name)), tool("c1", content)]
    for r in range(rounds_after):
        msgs += [asst(call(f"n{r}", "noop")), tool(f"n{r}", "ok")]
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
