"""Chat detection reads plain dicts at C speed (``_chat_detect._plain_score``) and any other
messages in a loop: both say the same of every list of messages."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.formats import detect
from ctxwin.formats._chat_detect import chat_score
from ctxwin.formats.openai_chat import _ROLES

PARTS = st.sampled_from(
    [
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "tool_use", "id": "t", "name": "n", "input": {}},
        {"type": "input_text", "text": "hi"},
        {"type": "video_url"},
        {"type": 3},
        {"text": "no type"},
        "a string part",
    ]
)
CONTENTS = st.one_of(
    st.sampled_from(["text", None, "", 5, {"text": "a dict"}]),
    st.lists(PARTS, max_size=3),
)
ROLES = st.sampled_from(
    ["user", "assistant", "system", "developer", "tool", "function", "model", None, 7, ["user"]]
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    msg: dict[str, Any] = {}
    if draw(st.booleans()) or draw(st.booleans()):
        msg["role"] = draw(ROLES)
    if draw(st.booleans()):
        msg["content"] = draw(CONTENTS)
    if draw(st.integers(0, 5)) == 0:
        msg["tool_calls"] = []
    return msg


@settings(max_examples=400, deadline=None)
@given(st.lists(messages(), max_size=6))
def test_plain_dicts_score_as_the_loop_scores_them(items: list[dict[str, Any]]) -> None:
    proxies = [MappingProxyType(m) for m in items]  # no plain dicts: read by the loop
    assert chat_score({"messages": items}, _ROLES) == chat_score({"messages": proxies}, _ROLES)
    assert chat_score(items, _ROLES) == chat_score(proxies, _ROLES)


def test_a_long_chat_history_is_detected_from_its_plain_dicts() -> None:
    """A sign of Chat at the end (a tool message), or a foreign part there, decides."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    history += [{"role": "assistant", "content": f"step {i}"} for i in range(500)]
    assert chat_score(history, _ROLES) == 1
    tool = {"role": "tool", "tool_call_id": "c", "content": ""}
    assert detect({"messages": [*history, tool]}) == "openai-chat"
    foreign = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}
    assert chat_score([*history, foreign], _ROLES) == 0
    assert detect({"messages": [*history, foreign]}) == "anthropic"
