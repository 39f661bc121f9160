"""OpenAI Chat Completions: ``{"messages": [...]}``.

- assistant ``tool_calls`` (``function`` and ``custom`` tools), ``content`` as a string, a
  list of parts or ``null``;
- results are ``role: "tool"`` messages with ``tool_call_id`` (and the legacy ``name``),
  answering only a call of that id;
- the legacy ``function_call`` / ``role: "function"`` pair, which has no ids (a function
  message answers the function_call of its name);
- SDK response objects in the list go back as the SDK sends them, provider fields such as
  DeepSeek's ``reasoning_content`` included (see ``from_object``); those fields, and
  OpenAI's own ``name``, ``refusal`` and ``audio``, count with their message
  (:data:`_UNPARSED`);
- an edited assistant message keeps ``tool_calls`` as it came (``null`` beside a legacy
  ``function_call``, as ``ChatCompletionMessage.model_dump()`` writes it); one whose calls
  all went loses the key, as OpenAI refuses ``"tool_calls": []`` ("empty array");
- ``system`` and ``developer`` messages are system messages;
- breakpoints are OpenAI's, or Anthropic's ``cache_control`` as LiteLLM takes them (see
  :data:`ctxwin.formats._markers.CHAT`).

Pairing: the tool messages answering an assistant message's calls come directly after it,
one per call, with no other message between.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import compact_json
from ctxwin._core.model import (
    Block,
    Loc,
    Message,
    Opaque,
    PairingRules,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from ctxwin._core.records import ProblemCode
from ctxwin.formats._base import Adapter, json_type, render_content, require, role_of
from ctxwin.formats._chat_detect import chat_score
from ctxwin.formats._chat_problems import problem_words
from ctxwin.formats._foreign import refuse_foreign
from ctxwin.formats._markers import CHAT, OPENAI
from ctxwin.formats._openai_images import openai_part_tokens
from ctxwin.tokens._meter import Overheads, Unparsed

__all__ = ["OpenAIChatAdapter"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_RESPONSE_ONLY = frozenset({"annotations", "parsed"})
"""Fields of an SDK response message that no request message takes: ``annotations`` (URL
citations; OpenAI-compatible servers may refuse them, LiteLLM's ``Message`` drops them for
that reason) and ``parsed`` (``chat.completions.parse``). Everything else the object holds
goes back as the SDK itself sends it, provider fields included: DeepSeek requires the
``reasoning_content`` of a turn with tool calls back, OpenRouter its ``reasoning_details``,
LiteLLM its ``thinking_blocks`` and ``provider_specific_fields``."""
_UNPARSED = (
    Unparsed(("name",), extra=1),
    Unparsed(("reasoning_content", "reasoning", "reasoning_details", "thinking_blocks")),
    Unparsed(("provider_specific_fields",)),
    Unparsed(("refusal",)),
    Unparsed(("audio",)),
)
"""Message fields the provider reads that parsing leaves out of blocks, counted with their
message (:class:`~ctxwin.tokens._meter.Unparsed`): ``name`` (OpenAI bills it and one token
more, the cookbook's ``tokens_per_name``); the reasoning, under the key each server reads
back (DeepSeek's and Moonshot's ``reasoning_content``, OpenRouter's ``reasoning`` /
``reasoning_details``, LiteLLM's ``thinking_blocks``: the same reasoning, the largest
counts); LiteLLM's ``provider_specific_fields``; ``refusal``; ``audio`` (an earlier audio
reply's id: the audio is not estimated). The reasoning of earlier turns counts: DeepSeek's
thinking mode reads back, and bills, that of every turn with tool calls in all later
requests (api-docs.deepseek.com/guides/thinking_mode: a 400 when it is missing), which is
every turn of an agent; it ignores that of an earlier turn without one, which ctxwin counts
all the same (an upper bound: a request it lets through fits)."""


def _n_content(content: object) -> int:
    """How many blocks parsing makes of a ``content`` value."""
    if isinstance(content, list):
        return len(content)
    return 1 if isinstance(content, str) else 0


def _without_parsed(call: object) -> object:
    """A tool call of an SDK response without the ``parsed_arguments`` the SDK's ``parse``
    adds to its function (not a request field)."""
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping) or "parsed_arguments" not in fn:
        return call
    assert isinstance(call, Mapping)
    return {**call, "function": {k: v for k, v in fn.items() if k != "parsed_arguments"}}


_WIRE_VARIANTS = frozenset({"", "claude-thinking"})
"""The variants whose bodies are Chat requests as a server gets them (the plain one,
LiteLLM's with ``thinking_blocks``), where another format's call or result is refused
(:func:`~ctxwin.formats._foreign.refuse_foreign`): read as Chat, their pairing would be
unseen and an edit could break it (an Anthropic body given ``format="openai-chat"``).
LangChain's messages (``langchain``) hold the chat model's own blocks: ChatAnthropic's
``tool_use`` repeats a call of ``tool_calls``; its adapter refuses a ``tool_result`` block
itself (:mod:`ctxwin.formats._lc_chat`)."""


_NOT_CHAT = (
    "OpenAI Chat does not have (its calls are an assistant message's 'tool_calls', its "
    "results 'tool' messages)"
)


class OpenAIChatAdapter(Adapter):
    name = "openai-chat"
    container = "messages"
    wire_roles = frozenset(_ROLES)
    rules: ClassVar[PairingRules] = PairingRules(
        turn="message",
        placement="adjacent",
        carrier="one_per_message",
        carrier_role="tool",
        # a tool message answers a call of its id only: the fallback by name of formats
        # with optional ids would pair it with a legacy function_call, which OpenAI refuses;
        # a function message, without id, answers a function_call of its name, never a tool
        # call ("tool_call_ids did not have response messages")
        ids_optional=False,
        strict_ids=True,
        # a tool message's content is a string or a list of text parts: null, absent or []
        # is refused ("expected a string, got null"); a function message's may be null
        results_need_content=True,
    )
    # OpenAI cookbook (num_tokens_from_messages): 3 per message, <|im_start|>, <|im_sep|> and
    # <|im_end|>, and the role's own token (it encodes every field's value, the role's too:
    # "system", "user", "assistant", "tool", "developer" are one token in o200k and cl100k);
    # every reply is primed with <|im_start|>assistant<|im_sep|>
    overheads = Overheads(message=4, request=3, unparsed=_UNPARSED, images=openai_part_tokens)
    envelope_keys = ("tools", "functions", "response_format")  # its JSON schema: a prompt
    media_words = (*Adapter.media_words, "audio", "video")  # vLLM's video_url

    def __init__(self, *, cache_control: bool = False) -> None:
        self.cache_control = cache_control  # its bodies go to Anthropic through LiteLLM

    def dialect(self, body: object) -> str:
        return CHAT.dialect if self.cache_control else ""

    def envelope_marks(self, body: object) -> int:
        return CHAT.envelope_marks(body, self.cache_control)

    def marker_of(self, item: Mapping[str, Any]) -> bool:
        return CHAT.marked(item)

    def default_marker(self, conv: Conversation) -> Mapping[str, Any] | None:
        return CHAT.default(conv)

    def marker_value(self, item: object) -> Mapping[str, Any] | None:
        found = OPENAI.values(item)
        return found[-1] if found else None

    def set_marker(self, item: dict[str, Any], on: bool | Mapping[str, Any]) -> dict[str, Any]:
        return CHAT.set(item, on)

    def from_object(self, data: dict[str, Any]) -> dict[str, Any]:
        """An SDK message (``ChatCompletionMessage``, LiteLLM's ``Message``) as the SDK sends
        it back, without what only a response holds (:data:`_RESPONSE_ONLY`), null fields
        (``refusal: null``, ``function_call: null``; but ``content``) and the
        ``parsed_arguments`` of a parsed completion's calls."""
        out = {
            k: v
            for k, v in data.items()
            if k not in _RESPONSE_ONLY and (v is not None or k == "content")
        }
        calls = out.get("tool_calls")
        if isinstance(calls, list):  # a parsed completion's calls carry their parsed arguments
            out["tool_calls"] = [_without_parsed(c) for c in calls]
        return out

    # ---------------------------------------------------------------- detection

    def detect(self, body: object) -> int:
        return chat_score(body, _ROLES)

    # ---------------------------------------------------------------- parse

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        path = self.path(index)
        role = role_of(raw, _ROLES, path=path, format=self.name)
        role_name = raw.get("role")
        if role_name == "tool":
            call_id = raw.get("tool_call_id")
            require(
                isinstance(call_id, str),
                "a tool message needs a string 'tool_call_id'",
                path=f"{path}.tool_call_id",
                format=self.name,
            )
            result = ToolResult(
                call_id=call_id,
                content=self._parts(raw.get("content"), path),
                name=raw.get("name") if isinstance(raw.get("name"), str) else None,
                raw=raw,
                pristine=True,
            )
            return Message("tool", (result,), raw=raw, pristine=True, index=index)
        if role_name == "function":
            name = raw.get("name")
            require(
                isinstance(name, str),
                "a function message needs a string 'name'",
                path=f"{path}.name",
                format=self.name,
            )
            result = ToolResult(
                call_id=None,
                content=self._parts(raw.get("content"), path),
                name=name,
                raw=raw,
                pristine=True,
            )
            return Message("tool", (result,), raw=raw, pristine=True, index=index)
        blocks: list[Block] = list(self._parts(raw.get("content"), path))
        if role == "assistant":
            calls = raw.get("tool_calls")
            if calls is not None:
                require(
                    isinstance(calls, list),
                    "'tool_calls' must be a list",
                    path=f"{path}.tool_calls",
                    format=self.name,
                )
                for k, tc in enumerate(calls):
                    blocks.append(self._call(tc, f"{path}.tool_calls[{k}]"))
            fc = raw.get("function_call")
            if fc is not None:
                fpath = f"{path}.function_call"
                require(
                    isinstance(fc, Mapping) and isinstance(fc.get("name"), str),
                    "'function_call' needs a string 'name'",
                    path=fpath,
                    format=self.name,
                )
                args = fc.get("arguments", "")
                blocks.append(
                    ToolCall(
                        None,
                        fc["name"],
                        args if isinstance(args, str) else compact_json(args),
                        raw=fc,
                        pristine=True,
                    )
                )
        return Message(role, tuple(blocks), raw=raw, pristine=True, index=index)

    def _call(self, tc: object, path: str) -> ToolCall:
        require(
            isinstance(tc, Mapping), "a tool call must be an object", path=path, format=self.name
        )
        assert isinstance(tc, Mapping)
        cid = tc.get("id")
        require(
            isinstance(cid, str),
            "a tool call needs a string 'id'",
            path=f"{path}.id",
            format=self.name,
        )
        if tc.get("type") == "custom":
            custom = tc.get("custom")
            require(
                isinstance(custom, Mapping) and isinstance(custom.get("name"), str),
                "a custom tool call needs 'custom.name'",
                path=f"{path}.custom",
                format=self.name,
            )
            assert isinstance(custom, Mapping)
            inp = custom.get("input", "")
            return ToolCall(
                cid,
                custom["name"],
                inp if isinstance(inp, str) else compact_json(inp),
                kind="custom",
                raw=tc,
                pristine=True,
            )
        fn = tc.get("function")
        require(
            isinstance(fn, Mapping) and isinstance(fn.get("name"), str),
            "a tool call needs 'function.name'",
            path=f"{path}.function",
            format=self.name,
        )
        assert isinstance(fn, Mapping)
        args = fn.get("arguments", "")
        return ToolCall(
            cid,
            fn["name"],
            args if isinstance(args, str) else compact_json(args),
            raw=tc,
            pristine=True,
        )

    def _parts(self, content: object, path: str) -> tuple[Part, ...]:
        if content is None:
            return ()
        if isinstance(content, str):
            return (Text(content, raw=content, pristine=True),)
        require(
            isinstance(content, list),
            f"'content' must be a string, a list of parts or null, not {json_type(content)}",
            path=f"{path}.content",
            format=self.name,
        )
        assert isinstance(content, list)
        parts = self.parts(content, f"{path}.content")
        if self.variant in _WIRE_VARIANTS:
            refuse_foreign(parts, f"{path}.content", self.name, _NOT_CHAT)
        return parts

    # ---------------------------------------------------------------- render

    def render_message(self, msg: Message, conv: Conversation) -> object:
        raw = msg.raw if isinstance(msg.raw, Mapping) else None
        if msg.role == "tool":
            (result,) = msg.blocks
            assert isinstance(result, ToolResult)
            if raw is None:
                out: dict[str, object] = (
                    {"role": "tool", "tool_call_id": result.call_id}
                    if result.call_id is not None
                    else {"role": "function", "name": result.name or ""}
                )
                out["content"] = self._content(result.content, None)
                return CHAT.render(out, msg, conv)
            out = dict(raw)
            if result.call_id is not None and raw.get("tool_call_id") != result.call_id:
                out["tool_call_id"] = result.call_id
            if not result.pristine:
                out["content"] = self._content(result.content, raw.get("content"))
            return CHAT.render(out, msg, conv)
        content_blocks = [b for b in msg.blocks if not isinstance(b, ToolCall)]
        calls = [b for b in msg.blocks if isinstance(b, ToolCall)]
        out = dict(raw) if raw is not None else {"role": msg.role}
        if (
            raw is None
            or not all(b.pristine for b in content_blocks)
            or len(content_blocks) != _n_content(raw.get("content"))
        ):
            parts = [b for b in content_blocks if isinstance(b, (Text, Opaque))]
            out["content"] = self._content(tuple(parts), raw.get("content") if raw else None)
        legacy = [c for c in calls if c.id is None]
        modern = [c for c in calls if c.id is not None]
        if modern:
            out["tool_calls"] = [self._render_call(c) for c in modern]
        elif raw is not None and raw.get("tool_calls"):
            del out["tool_calls"]  # every call went: OpenAI refuses "tool_calls": []
        if legacy:
            c = legacy[0]
            out["function_call"] = (
                c.raw
                if c.pristine
                else {
                    **(c.raw if isinstance(c.raw, Mapping) else {}),
                    "name": c.name,
                    "arguments": c.arguments,
                }
            )
        return CHAT.render(out, msg, conv)

    def _render_call(self, call: ToolCall) -> object:
        if call.pristine:
            return call.raw
        base = dict(call.raw) if isinstance(call.raw, Mapping) else {"type": "function"}
        base["id"] = call.id
        if call.kind == "custom":
            custom = base.get("custom")
            base["type"] = "custom"
            base["custom"] = {
                **(custom if isinstance(custom, Mapping) else {}),
                "name": call.name,
                "input": call.arguments,
            }
        else:
            fn = base.get("function")
            base["function"] = {
                **(fn if isinstance(fn, Mapping) else {}),
                "name": call.name,
                "arguments": call.arguments,
            }
        return base

    def _content(self, parts: tuple[Part, ...], original: object) -> object:
        """Content in the shape it had: a string stays a string when it can."""
        return render_content(parts, original)

    # ---------------------------------------------------------------- reporting

    def block_path(self, msg: Message, block: int) -> str:
        path = self.path(msg.index)
        raw = msg.raw if isinstance(msg.raw, Mapping) else {}
        if msg.role == "tool":
            return path
        content = raw.get("content")
        n_content = _n_content(content)
        if block < n_content:
            return f"{path}.content" + (f"[{block}]" if isinstance(content, list) else "")
        calls = raw.get("tool_calls")
        k = block - n_content
        if k < (len(calls) if isinstance(calls, list) else 0) or "function_call" not in raw:
            return f"{path}.tool_calls[{k}]"
        return f"{path}.function_call"  # parsed after the tool_calls

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        return problem_words(code, conv, loc, call_id)
