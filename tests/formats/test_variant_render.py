"""A conversation remembers the adapter that parsed it: a variant of a format (LiteLLM's
chat with ``thinking_blocks``, LangChain's messages) renders as the variant through
``ctxwin.render`` and ``Policy.adapter_of``. Looked up by the format's name, the plain Chat
adapter put back the thinking the window had removed (a 400 on a model that checks its
prefix) and copied kept thinking into ``content`` as well."""

from __future__ import annotations

from typing import Any

import ctxwin
from ctxwin._core.model import Opaque, Text
from ctxwin.formats import adapter_of, get_adapter
from ctxwin.formats._chat_thinking import ClaudeThinkingChatAdapter

THINKING = {"type": "thinking", "thinking": "plan", "signature": "sig"}
BODY: dict[str, Any] = {
    "model": "claude-x",
    "messages": [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "calling",
            "thinking_blocks": [THINKING],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "data"},
    ],
}


def test_a_variants_conversation_renders_as_the_variant() -> None:
    adapter = ClaudeThinkingChatAdapter()
    conv = adapter.parse(BODY)
    assert adapter_of(conv) is adapter
    turn = conv.messages[1]
    without = turn.with_blocks(tuple(b for b in turn.blocks if not isinstance(b, Opaque)))
    gone = conv.with_messages((conv.messages[0], without, conv.messages[2]))
    assert "thinking_blocks" not in ctxwin.render(gone)["messages"][1]
    short = tuple(Text("shortened") if isinstance(b, Text) else b for b in turn.blocks)
    edited = ctxwin.render(conv.with_messages((conv.messages[0], turn.with_blocks(short))))
    assert edited["messages"][1]["content"] == "shortened"
    assert edited["messages"][1]["thinking_blocks"] == [THINKING]


def test_a_policy_names_the_adapter_a_result_was_made_with() -> None:
    adapter = ClaudeThinkingChatAdapter()
    policy = ctxwin.Policy({"tokenizer": "o200k_base"})
    assert policy.adapter_of(policy.apply(BODY, format=adapter)) is adapter
    not_claude = {**BODY, "model": "gpt-4o"}
    chat = get_adapter("openai-chat")
    assert policy.adapter_of(policy.apply(not_claude, format="openai-chat")) is chat
    # a chat for Claude carrying LiteLLM's thinking_blocks is read as LiteLLM sends it
    found = policy.adapter_of(policy.apply(BODY, format="openai-chat"))
    assert isinstance(found, ClaudeThinkingChatAdapter)
