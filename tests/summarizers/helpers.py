"""The real SDK clients over ``httpx2.MockTransport`` (the transport both SDKs are built on):
each request is recorded, each answer is the one the test set up. No network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic
import httpx2
import openai

import ctxwin
from ctxwin import Policy
from ctxwin.testing import FakeCounter
from tests.steps.conftest import body_with_result

Kind = Literal["sync", "async"]
KINDS = ("sync", "async")

LONG = "\n".join(
    f"src/app/module_{i}.py:{10 + i}: TypeError: cannot add 'int' and 'str' (id=A{i:04d})"
    for i in range(60)
)
"""A long tool output full of what summaries lose: paths, line numbers, ids, error lines."""

CONFIG: dict[str, Any] = {
    "tools": {
        "run_tests": {
            "max_tokens": 100,
            "summarize": {
                "over_tokens": 200,
                "max_tokens": 50,
                "instructions": "Name every failing module.",
                "timeout": 10,
            },
        }
    }
}


@dataclass
class Server:
    """A fake provider: ``status`` and ``body`` for every request, each request recorded."""

    body: dict[str, Any]
    status: int = 200
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self.status, json=self.body)

    @property
    def sent(self) -> dict[str, Any]:
        """The JSON body of the only request."""
        (request,) = self.requests
        body: dict[str, Any] = json.loads(request.content)
        return body


def openai_answer(content: str | None = "summary: 60 TypeErrors", **choice: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if "refusal" in choice:
        message["refusal"] = choice.pop("refusal")
    if "tool_calls" in choice:
        message["tool_calls"] = choice.pop("tool_calls")
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "message": message, "finish_reason": choice.get("finish", "stop")}
        ],
    }


def anthropic_answer(
    text: str = "summary: 60 TypeErrors", stop: str = "end_turn"
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def error_body(status: int) -> dict[str, Any]:
    return {"error": {"message": f"provider says {status}", "type": "server_error"}}


def openai_client(kind: Kind, server: Server) -> Any:
    transport = httpx2.MockTransport(server)
    if kind == "sync":
        return openai.OpenAI(
            api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport)
        )
    return openai.AsyncOpenAI(
        api_key="sk-test", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
    )


def anthropic_client(kind: Kind, server: Server) -> Any:
    transport = httpx2.MockTransport(server)
    if kind == "sync":
        return anthropic.Anthropic(
            api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport)
        )
    return anthropic.AsyncAnthropic(
        api_key="sk-test", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
    )


def call(summarizer: Any, text: str = "out", **kw: Any) -> Any:
    """One direct call of a summarizer, sync or async, with the step's arguments."""
    args: dict[str, Any] = {"tool": "run_tests", "call_id": "c1", "max_tokens": 50}
    args["instructions"] = ""
    args.update(kw)
    got = summarizer(text, **args)
    if asyncio.iscoroutine(got):
        return asyncio.run(got)
    return got


def apply(summarizer: Any, how: Literal["apply", "aapply"] = "apply") -> ctxwin.Result:
    """A request whose LONG ``run_tests`` result the policy summarizes through ``summarizer``."""
    pol = Policy(CONFIG, summarizer=summarizer, counter=FakeCounter(), format="openai-chat")
    body = body_with_result(LONG, "run_tests")
    if how == "apply":
        return pol.apply(body)
    return asyncio.run(pol.aapply(body))


def result_of(result: ctxwin.Result) -> str:
    """The text of the tool result as the policy sent it."""
    request = result.request
    assert isinstance(request, dict)
    content = request["messages"][2]["content"]
    assert isinstance(content, str)
    return content


Check = Callable[[ctxwin.Result], None]
