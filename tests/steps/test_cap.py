"""cap: exact token boundaries, a notice, and no full tokenization of huge results."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxwin
from ctxwin import ToolResult
from ctxwin.tokens import TiktokenCounter
from tests.steps.conftest import body_with_result, result_text
from tests.tokens.images import png

COUNTER = TiktokenCounter("o200k_base")
LINES = "\n".join(f"line {i}: value={i * 7} status=ok 東京" for i in range(2000))


@pytest.mark.parametrize("mode", ["head", "tail", "head_tail"])
def test_capped_results_fit_the_budget_notice_included(apply_one: Any, mode: str) -> None:
    result, text = apply_one({"tools": {"*": {"max_tokens": 200, "truncate": mode}}}, LINES)
    assert COUNTER.count(text) <= 200
    assert "tokens of get_order output truncated ...]" in text
    (edit,) = result.report.edits
    assert (edit.step, edit.tokens_before) == ("cap", COUNTER.count(LINES))
    assert edit.tokens_after == COUNTER.count(text)


def test_head_keeps_the_start_cut_on_a_token_boundary(apply_one: Any) -> None:
    _, text = apply_one({"tools": {"*": {"max_tokens": 100, "truncate": "head"}}}, LINES)
    head, notice = text.rsplit("\n", 1)
    assert LINES.startswith(head)
    assert COUNTER.encode(LINES)[: len(COUNTER.encode(head))] == COUNTER.encode(head)
    assert notice.startswith("[... ")
    assert notice.endswith(" tokens of get_order output truncated ...]")


def test_tail_keeps_the_end(apply_one: Any) -> None:
    _, text = apply_one({"tools": {"*": {"max_tokens": 100, "truncate": "tail"}}}, LINES)
    _notice, tail = text.split("\n", 1)
    assert LINES.endswith(tail)
    assert "\ufffd" not in text


def test_head_tail_keeps_both_ends_and_says_how_much_is_gone(apply_one: Any) -> None:
    _, text = apply_one({"tools": {"*": {"max_tokens": 120}}}, LINES)
    assert text.startswith("line 0: ")
    assert text.endswith("line 1999: value=13993 status=ok 東京")
    total = COUNTER.count(LINES)
    assert f" of {total} tokens of get_order output truncated" in text


def test_a_custom_notice_gets_its_fields(apply_one: Any) -> None:
    config = {
        "tools": {
            "*": {
                "max_tokens": 80,
                "truncate": "head",
                "notice": "<{kept_tokens}/{total_tokens} of {tool} {call_id}>",
            }
        }
    }
    _, text = apply_one(config, LINES)
    assert text.endswith(f"/{COUNTER.count(LINES)} of get_order c1>")


def test_short_results_are_left_alone(apply_one: Any) -> None:
    result, text = apply_one({"tools": {"*": {"max_tokens": 100}}}, "short")
    assert text == "short"
    assert result.report.edits == ()


def test_errors_are_capped_too() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "run", "response": {"error": LINES}}}],
            },
        ]
    }
    result = ctxwin.Policy({"tools": {"*": {"max_tokens": 60}}}).apply(body)
    part = result.request["contents"][2]["parts"][0]["functionResponse"]  # type: ignore[index]
    assert list(part["response"]) == ["error"]
    assert COUNTER.count(part["response"]["error"]) <= 60


class Spy:
    """A counter that remembers how many texts over a million characters it counted and
    the longest text it encoded."""

    name = "spy"
    exact = True
    can_encode = True

    def __init__(self) -> None:
        self.whole = 0
        self.encoded = 0

    def count(self, text: str) -> int:
        self.whole += len(text) >= 1_000_000
        return COUNTER.count(text)

    def encode(self, text: str) -> list[int]:
        self.encoded = max(self.encoded, len(text))
        return COUNTER.encode(text)

    def decode(self, tokens: list[int]) -> str:
        return COUNTER.decode(tokens)


def test_capping_50_mb_counts_it_once_and_cuts_in_windows() -> None:
    """The total is counted once (the report reads the same count); the cut itself
    tokenizes only windows around the kept parts."""
    huge = ("0123456789 abcdefghij " * 50) + "\n"
    huge = huge * (50_000_000 // len(huge))
    spy = Spy()
    pol = ctxwin.Policy({"tools": {"*": {"max_tokens": 500}}}, counter=spy, format="openai-chat")
    result = pol.apply(body_with_result(huge))
    text = result_text(result)
    assert COUNTER.count(text) <= 500
    assert spy.encoded < 1_000_000  # windows around the kept parts
    (edit,) = result.report.edits
    assert spy.whole == 1  # counted once, and the report found the count memoized
    assert edit.note is None
    assert (edit.tokens_before, edit.chars_before) == (COUNTER.count(huge), len(huge))


def test_the_total_of_a_result_over_2m_characters_is_counted_not_estimated() -> None:
    """A long log whose middle differs from its ends: the notice and the edit say what was
    really cut, and the report's edits add up to what it saved."""
    edge = "hello world " * 10_000
    log = edge + "数据库连接失败，正在重试。" * 160_000 + edge
    assert len(log) > 2_000_000
    pol = ctxwin.Policy({"tools": {"*": {"max_tokens": 200}}}, format="openai-chat")
    result = pol.apply(body_with_result(log))
    total = COUNTER.count(log)
    assert f" of {total} tokens of get_order output truncated ...]" in result_text(result)
    (edit,) = result.report.edits
    assert (edit.tokens_before, edit.note) == (total, None)
    assert edit.saved == result.report.saved


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" * 150 + "\nerror: build failed"
"""A CLI's spinner frames: 1,520 characters, three tokens each in o200k."""


def test_a_result_with_more_tokens_than_characters_is_capped(apply_one: Any) -> None:
    """Length is no bound on tokens: the result is counted before it is let through."""
    assert len(SPINNER) < 2000 < COUNTER.count(SPINNER)
    result, text = apply_one({"tools": {"*": {"max_tokens": 2000}}}, SPINNER)
    assert COUNTER.count(text) <= 2000
    (edit,) = result.report.edits
    assert (edit.step, edit.tokens_before) == ("cap", COUNTER.count(SPINNER))


def test_a_custom_counter_of_bytes_is_obeyed_for_text_of_few_characters(apply_one: Any) -> None:
    def utf8_bytes(text: str) -> int:
        return len(text.encode("utf-8"))

    text = "é" * 150  # 150 characters, 300 bytes
    result, out = apply_one({"tools": {"*": {"max_tokens": 200}}}, text, counter=utf8_bytes)
    assert utf8_bytes(out) <= 200
    assert [e.step for e in result.report.edits] == ["cap"]


# ------------------------------------------------------------------ images and files


def _screenshot_body(fmt: str, text: str) -> dict[str, Any]:
    """A request whose one result, of ``screenshot``, is ``text`` and three 1500x1500
    screenshots, as the format carries images in a tool result."""
    data = base64.b64encode(png(1500, 1500)).decode("ascii")
    if fmt == "anthropic":
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
        image["source"]["data"] = data  # type: ignore[index]
        content = [{"type": "text", "text": text}, image, image, image]
        return {
            "messages": [
                {"role": "user", "content": "take screenshots"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "c1", "name": "screenshot", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "c1", "content": content}],
                },
            ]
        }
    if fmt == "openai-responses":
        shot = {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}
        output = [{"type": "input_text", "text": text}, shot, shot, shot]
        return {
            "input": [
                {"role": "user", "content": "take screenshots"},
                {"type": "function_call", "call_id": "c1", "name": "screenshot", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": output},
            ]
        }
    inline = {"inlineData": {"mimeType": "image/png", "data": data}}
    response = {"id": "c1", "name": "screenshot", "response": {"output": text}}
    response["parts"] = [inline, inline, inline]
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "take screenshots"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "screenshot"}}]},
            {"role": "user", "parts": [{"functionResponse": response}]},
        ]
    }


def _sent(result: ctxwin.Result) -> ToolResult:
    (block,) = (
        b for m in result.conversation.messages for b in m.blocks if isinstance(b, ToolResult)
    )
    return block


FORMATS = ["anthropic", "openai-responses", "gemini"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_result_over_its_cap_by_its_images_keeps_them_and_says_so(fmt: str) -> None:
    """max_tokens caps the text: the screenshots stay (the window clears old ones), and the
    edit says the result went over its cap because of them, by the report's own count."""
    policy = ctxwin.Policy({"tools": {"screenshot": {"max_tokens": 500}}}, format=fmt)
    body = _screenshot_body(fmt, "3 screenshots")
    first = policy.apply(body)
    assert first.request == body
    (stats,) = first.report.tools
    text = COUNTER.count("3 screenshots")
    images = stats.tokens_before - text
    assert images > 500
    (edit,) = first.report.edits
    assert (edit.step, edit.call_id, edit.tokens_before, edit.tokens_after) == (
        "cap",
        "c1",
        text,
        text,
    )
    assert (
        edit.note
        == f"result over max_tokens 500 because of its images and files ({images:,} tokens), kept"
    )
    again = policy.apply(first.request)
    assert (again.request, again.report.edits) == (first.request, first.report.edits)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_capped_text_next_to_images_says_what_they_add(fmt: str) -> None:
    """The text is cut to the cap and the images kept: the edit's figures are the text's,
    and its note names the images' tokens the result goes out with."""
    policy = ctxwin.Policy({"tools": {"screenshot": {"max_tokens": 500}}}, format=fmt)
    first = policy.apply(_screenshot_body(fmt, LINES))
    sent = _sent(first)
    assert COUNTER.count(sent.text) <= 500
    assert [type(p).__name__ for p in sent.content] == ["Text", "Opaque", "Opaque", "Opaque"]
    (stats,) = first.report.tools
    images = stats.tokens_after - COUNTER.count(sent.text)
    (edit,) = first.report.edits
    assert (edit.tokens_before, edit.tokens_after) == (
        COUNTER.count(LINES),
        COUNTER.count(sent.text),
    )
    assert edit.note is not None
    assert edit.note.endswith(
        f"result over max_tokens 500 because of its images and files ({images:,} tokens), kept"
    )


def test_images_within_the_cap_with_the_text_are_not_noted() -> None:
    policy = ctxwin.Policy({"tools": {"screenshot": {"max_tokens": 20_000}}}, format="anthropic")
    body = _screenshot_body("anthropic", "3 screenshots")
    result = policy.apply(body)
    assert (result.request, result.report.edits) == (body, ())
