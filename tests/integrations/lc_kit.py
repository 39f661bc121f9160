"""An offline LangChain agent for the integration tests: a scripted fake chat model that
records every request it receives, tools with large results (5-20k tokens under the
FakeCounter, one word a token), a parallel-call turn, a failing tool, a text+image result.

Import it after ``pytest.importorskip("langchain_core")``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import ToolException, tool
from pydantic import Field

import ctxwin
from ctxwin.formats.langchain import LangChainMessages
from ctxwin.testing import FakeCounter

IMAGE = {"type": "image", "base64": "iVBORw0KGgoAAAANSUhEUg==", "mime_type": "image/png"}
LONG_TEXT = "x" * 200  # a long argument value: the window's clear_tool_inputs shortens it


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i % 997}" for i in range(n))


class RecordingModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that keeps every list of messages it is called with (and
    takes tools, which the fake ignores). A ``usage_factor`` sets ``usage_metadata`` on its
    answers: that many input tokens per word it received."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    usage_factor: float = 0.0

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        result = super()._generate(messages, *args, **kwargs)
        if self.usage_factor:
            n = sum(len(str(m.content).split()) for m in messages)
            message = result.generations[0].message
            assert isinstance(message, AIMessage)
            message.usage_metadata = {
                "input_tokens": int(n * self.usage_factor),
                "output_tokens": 5,
                "total_tokens": int(n * self.usage_factor) + 5,
            }
        return result


def _search(query: str, n: int) -> str:
    per = 40
    matches = [
        {"path": f"src/{query}_{i}.py", "line": i + 1, "text": words(per, f"{query}{i}_")}
        for i in range(n // per)
    ]
    return json.dumps({"query": query, "matches": matches})


SIZES = {"parser": 12_000, "lexer": 20_000, "ast": 6_000}
FILES = {"a.py": 8_000, "b.py": 9_000, "c.py": 15_000, "d.py": 10_000, "e.py": 5_000}


@tool
def search_code(query: str) -> str:
    """Search the code base."""
    return _search(query, SIZES[query])


@tool(response_format="content_and_artifact")
def read_file(path: str) -> tuple[str, dict[str, Any]]:
    """Read a file."""
    return words(FILES[path], path.replace(".", "")), {"path": path, "size": FILES[path]}


@tool
def write_file(path: str, content: str) -> str:
    """Write a file; answers with the diff."""
    return f"wrote {len(content)} characters to {path}\n" + words(4_000, "diff")


@tool
def run_tests() -> str:
    """Run the test suite."""
    raise ToolException("FAILED test_parser.py\n" + words(6_000, "trace"))


run_tests.handle_tool_error = True


@tool
def screenshot() -> list[dict[str, Any]]:
    """Take a screenshot of the app."""
    return [{"type": "text", "text": words(5_000, "ocr")}, dict(IMAGE)]


TOOLS = [search_code, read_file, write_file, run_tests, screenshot]


def _turn(n: int, *calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        id=f"ai-{n}",
        name="coder",
        response_metadata={"model_name": "fake", "turn": n},
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{n}_{k}", "type": "tool_call"}
            for k, (name, args) in enumerate(calls)
        ],
    )


def script() -> list[AIMessage]:
    """Nine tool turns (one with two parallel calls, one failing, one text+image), then
    the answer."""
    return [
        _turn(1, ("search_code", {"query": "parser"})),
        _turn(2, ("write_file", {"path": "notes.md", "content": LONG_TEXT})),
        _turn(3, ("read_file", {"path": "a.py"})),
        _turn(4, ("read_file", {"path": "b.py"}), ("search_code", {"query": "ast"})),
        _turn(5, ("run_tests", {})),
        _turn(6, ("screenshot", {})),
        _turn(7, ("read_file", {"path": "c.py"})),
        _turn(8, ("search_code", {"query": "lexer"})),
        _turn(9, ("read_file", {"path": "d.py"})),
        _turn(10, ("read_file", {"path": "e.py"})),
        AIMessage(content="The parser is fixed.", id="ai-final"),
    ]


SYSTEM = SystemMessage(
    content=[
        {
            "type": "text",
            "text": "You are a careful coding agent.",
            "cache_control": {"type": "ephemeral"},
        }
    ],
    id="sys",
)

POLICY: dict[str, Any] = {
    "context_window": 24_000,
    "window": {"trigger": 0.6, "target": 0.3, "keep_rounds": 2, "clear_tool_inputs": True},
    "tools": {
        "search_code": {"select": "matches[].{path: path, line: line}", "max_tokens": 1_500},
        "read_file": {"max_tokens": 3_000},
        "*": {"max_tokens": 2_000},
    },
}


def make_policy(**overrides: Any) -> ctxwin.Policy:
    return ctxwin.Policy({**POLICY, **overrides}, counter=FakeCounter())


def as_body(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """A request as the model received it, as an OpenAI Chat body (for ``ctxwin.check``)."""
    system = messages[0] if messages and messages[0].type == "system" else None
    rest = messages[1:] if system is not None else messages
    return LangChainMessages().body(rest, system).body


def prefix_breaks(requests: Sequence[Sequence[BaseMessage]]) -> int:
    """How many requests do not start with the whole previous request."""
    breaks = 0
    for prev, cur in itertools.pairwise(requests):
        if list(cur[: len(prev)]) != list(prev):
            breaks += 1
    return breaks


def by_id(messages: Sequence[BaseMessage]) -> dict[str, BaseMessage]:
    return {m.id: m for m in messages if m.id is not None}
