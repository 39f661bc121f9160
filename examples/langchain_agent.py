"""A LangChain ``create_agent`` agent with ctxwin as middleware — runs offline.

The model is a fake that plays a coding agent (it runs the tests, searches, reads files,
then answers); the tools return long results, as real ones do. ``CtxwinMiddleware`` applies
the policy of ``examples/policy`` before every model call: the model gets the edited request
and the agent's state keeps the whole history. Each line printed compares the two.

Run:  pip install 'ctxwin[langchain]' && python examples/langchain_agent.py

With a real model, pass it (``init_chat_model("openai:gpt-4o")``...) instead of the fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field

import ctxwin
from ctxwin.integrations.langchain import CtxwinMiddleware

HERE = Path(__file__).resolve().parent


@tool
def run_tests(path: str) -> str:
    """Run the tests under a path."""
    passed = [f"tests/test_{i}.py::test_case PASSED" for i in range(300)]
    return "\n".join([*passed, "FAILED tests/test_totals.py::test_totals", "1 failed, 300 passed"])


@tool
def search_code(query: str) -> str:
    """Search the code base."""
    hits = [
        {"path": f"src/m{i}.py", "line": i, "text": f"{query} = Decimal(rate_{i})"}
        for i in range(60)
    ]
    return json.dumps({"matches": hits})


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{i:4d}  value_{i} = compute(order, rate)  # {path}" for i in range(400))


PLAN = [
    ("run_tests", {"path": "tests/"}),
    ("search_code", {"query": "rate"}),
    ("read_file", {"path": "src/totals.py"}),
    ("read_file", {"path": "src/currency.py"}),
    ("run_tests", {"path": "tests/test_totals.py"}),
    ("read_file", {"path": "src/rates.py"}),
    ("run_tests", {"path": "tests/"}),
]


class FakeCodingModel(GenericFakeChatModel):
    """Answers with the next call of ``PLAN``, then a final text; keeps what it received."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeCodingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script() -> list[AIMessage]:
    turns = [
        AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"call_{i}", "type": "tool_call"}])
        for i, (n, a) in enumerate(PLAN)
    ]
    return [*turns, AIMessage("Done: the totals are fixed.")]


def chars(messages: list[BaseMessage]) -> int:
    return sum(len(str(m.content)) for m in messages)


def main() -> int:
    model = FakeCodingModel(messages=iter(script()))

    policy = ctxwin.load_policy(HERE / "policy")
    middleware = CtxwinMiddleware(policy)
    agent = create_agent(
        model,
        [run_tests, search_code, read_file],
        system_prompt="You are a coding agent.",
        middleware=[middleware],
    )

    state = agent.invoke({"messages": [{"role": "user", "content": "The totals test fails."}]})
    history = state["messages"]
    for turn, request in enumerate(model.received):
        print(
            f"turn {turn}: the model got {len(request):2d} messages, "
            f"{chars(request):6,d} characters"
        )
    report = middleware.last_result.report if middleware.last_result else None
    assert report is not None
    print(
        f"state: {len(history)} messages, {chars(history):,d} characters; last request "
        f"{report.tokens_before} -> {report.tokens_after} tokens, "
        f"window events {report.window_events}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
