"""What you need to test code that uses ctxwin: doubles, an edit capture, body builders.

- ``FakeCounter`` counts one token per whitespace-separated word, so expected numbers are
  easy to write by hand.
- ``FakeSummarizer`` returns the first words of the text and records each call; it can be
  told to fail in the ways real model callbacks fail (raise, hang, block, swallow a
  cancellation, return nothing, return too much) to test fallbacks and timeouts.
  ``AsyncFakeSummarizer`` is its async twin.
- ``capture_edits()`` collects every edit made while it is active (from the ``ctxwin``
  logger, as structlog's ``capture_logs`` does), your own steps' edits included.
- ``agent_body(rounds, format=...)`` writes a small agent request in any of the four wire
  formats: a system prompt, a task, and rounds of tool calls with their results.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxwin._core.model import FormatName
from ctxwin._core.records import Edit

__all__ = [
    "AsyncFakeSummarizer",
    "FakeCounter",
    "FakeSummarizer",
    "SummaryCall",
    "ToolUse",
    "agent_body",
    "capture_edits",
]


class FakeCounter:
    """One token per whitespace-separated word (an empty text is 0 tokens)."""

    name = "fake-words"
    exact = True

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


@dataclass(frozen=True)
class SummaryCall:
    text: str
    tool: str
    call_id: str | None
    max_tokens: int
    instructions: str


Behaviour = Literal[
    "ok", "raise", "hang", "block", "swallow_cancel", "empty", "too_long", "not_str"
]


@dataclass
class FakeSummarizer:
    """A summarizer callback: ``"summary: "`` and the first ``max_tokens // 2`` words.

    ``behaviour`` makes it fail as model callbacks do:

    - ``raise``: raises ``error`` (by default ``RuntimeError("model unavailable")``; pass
      ``KeyboardInterrupt()`` or ``SystemExit()`` to see them reach your code);
    - ``hang``: answers after ``hang_for`` seconds (slow, but well-behaved);
    - ``block``: blocks its thread without yielding until :meth:`release` is called or
      ``hang_for`` seconds pass, then answers (the async twin blocks its event loop, as a
      coroutine calling ``time.sleep`` does);
    - ``swallow_cancel``: the async twin ignores the first cancellation and answers
      ``hang_for`` seconds later (a second one ends it); the sync one behaves as ``hang``;
    - ``empty`` (returns ""), ``too_long`` (the text doubled), ``not_str`` (None).

    ``calls`` records each call as it starts, ``answers`` each text returned.
    """

    behaviour: Behaviour = "ok"
    hang_for: float = 5.0
    calls: list[SummaryCall] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    error: BaseException | None = field(default=None, kw_only=True)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _released: threading.Event = field(default_factory=threading.Event, repr=False)

    def __call__(
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        self._record(SummaryCall(text, tool, call_id, max_tokens, instructions))
        if self.behaviour in ("hang", "swallow_cancel"):
            time.sleep(self.hang_for)
        return self._answer(text, max_tokens)

    def release(self) -> None:
        """Let every ``block``-ed call (and any later one) go on at once."""
        self._released.set()

    def _record(self, call: SummaryCall) -> None:
        with self._lock:
            self.calls.append(call)

    def _answer(self, text: str, max_tokens: int) -> str:
        if self.behaviour == "raise":
            raise self.error if self.error is not None else RuntimeError("model unavailable")
        if self.behaviour == "block":
            self._released.wait(self.hang_for)
        if self.behaviour == "empty":
            answer = ""
        elif self.behaviour == "too_long":
            answer = text + " " + text
        elif self.behaviour == "not_str":
            return None  # type: ignore[return-value]
        else:
            answer = "summary: " + " ".join(text.split()[: max(max_tokens // 2, 1)])
        with self._lock:
            self.answers.append(answer)
        return answer


@dataclass
class AsyncFakeSummarizer(FakeSummarizer):
    """The async version of :class:`FakeSummarizer` (``hang`` awaits instead of sleeping,
    ``block`` blocks the event loop, ``swallow_cancel`` swallows a cancellation)."""

    async def __call__(  # type: ignore[override]
        self, text: str, *, tool: str, call_id: str | None, max_tokens: int, instructions: str
    ) -> str:
        self._record(SummaryCall(text, tool, call_id, max_tokens, instructions))
        if self.behaviour == "hang":
            await asyncio.sleep(self.hang_for)
        elif self.behaviour == "swallow_cancel":
            try:
                await asyncio.sleep(self.hang_for)
            except asyncio.CancelledError:
                await asyncio.sleep(self.hang_for)
        return self._answer(text, max_tokens)


# ------------------------------------------------------------------------------ edits


class _EditHandler(logging.Handler):
    def __init__(self, into: list[Edit]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        edit = getattr(record, "ctxwin_edit", None)
        if isinstance(edit, Edit):
            self.into.append(edit)


@contextmanager
def capture_edits() -> Iterator[list[Edit]]:
    """Collect the edits made (logged for the first time) while the block runs::

        with capture_edits() as edits:
            policy.apply(request)
        assert [e.step for e in edits] == ["cap"]

    An edit found again in a memo by a later request is not made again, so it is not
    captured again (it is in that request's ``report.edits``).
    """
    logger = logging.getLogger("ctxwin")
    edits: list[Edit] = []
    handler = _EditHandler(edits)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield edits
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# ------------------------------------------------------------------------------ bodies

ToolUse = tuple[str, Mapping[str, Any], str]
"""One tool call of a round: ``(tool name, arguments, result text)``."""


def agent_body(
    rounds: Sequence[Sequence[ToolUse]],
    *,
    format: FormatName = "openai-chat",
    system: str = "You are an agent.",
    task: str = "Do the task.",
    final: str | None = None,
    missing: Sequence[str] = (),
) -> dict[str, Any]:
    """A request body of an agent: the system prompt, the task, then each round (an
    assistant turn calling each of its tools, then their results), and ``final`` as the
    assistant's last text if given. Calls are ``call_1``, ``call_2``... in order;
    ``missing`` lists the call ids whose results are left out (a pairing problem)."""
    numbered: list[list[tuple[str, str, Mapping[str, Any], str]]] = []
    n = 0
    for calls in rounds:
        numbered.append(
            [(f"call_{n + i + 1}", tool, args, res) for i, (tool, args, res) in enumerate(calls)]
        )
        n += len(calls)
    build = _BUILDERS[format]
    return build(numbered, system, task, final, frozenset(missing))


_Rounds = list[list[tuple[str, str, Mapping[str, Any], str]]]


def _chat(
    rounds: _Rounds, system: str, task: str, final: str | None, missing: frozenset[str]
) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": task},
    ]
    for calls in rounds:
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(args)},
                    }
                    for cid, tool, args, _ in calls
                ],
            }
        )
        msgs.extend(
            {"role": "tool", "tool_call_id": cid, "content": res}
            for cid, _, _, res in calls
            if cid not in missing
        )
    if final is not None:
        msgs.append({"role": "assistant", "content": final})
    return {"model": "gpt-4o", "messages": msgs}


def _anthropic(
    rounds: _Rounds, system: str, task: str, final: str | None, missing: frozenset[str]
) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for calls in rounds:
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": cid, "name": tool, "input": dict(args)}
                    for cid, tool, args, _ in calls
                ],
            }
        )
        results = [
            {"type": "tool_result", "tool_use_id": cid, "content": res}
            for cid, _, _, res in calls
            if cid not in missing
        ]
        if results:
            msgs.append({"role": "user", "content": results})
    if final is not None:
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": final}]})
    return {"model": "claude-sonnet-4-5", "system": system, "messages": msgs}


def _responses(
    rounds: _Rounds, system: str, task: str, final: str | None, missing: frozenset[str]
) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for calls in rounds:
        items.extend(
            {"type": "function_call", "call_id": cid, "name": tool, "arguments": json.dumps(args)}
            for cid, tool, args, _ in calls
        )
        items.extend(
            {"type": "function_call_output", "call_id": cid, "output": res}
            for cid, _, _, res in calls
            if cid not in missing
        )
    if final is not None:
        items.append({"role": "assistant", "content": final})
    return {"model": "gpt-5", "instructions": system, "input": items}


def _gemini(
    rounds: _Rounds, system: str, task: str, final: str | None, missing: frozenset[str]
) -> dict[str, Any]:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": task}]}]
    for calls in rounds:
        contents.append(
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": cid, "name": tool, "args": dict(args)}}
                    for cid, tool, args, _ in calls
                ],
            }
        )
        responses = [
            {"functionResponse": {"id": cid, "name": tool, "response": {"output": res}}}
            for cid, tool, _, res in calls
            if cid not in missing
        ]
        if responses:
            contents.append({"role": "user", "parts": responses})
    if final is not None:
        contents.append({"role": "model", "parts": [{"text": final}]})
    return {"systemInstruction": {"parts": [{"text": system}]}, "contents": contents}


_BUILDERS = {
    "openai-chat": _chat,
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
}
