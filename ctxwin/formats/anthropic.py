"""Anthropic Messages: ``{"system"?, "messages": [...], "tools"?}``.

- ``content`` is a string or a list of blocks: ``text``, ``tool_use`` (the call, its
  ``input`` an object), ``tool_result`` (``tool_use_id``; ``content`` a string, a list of
  parts or absent; ``is_error``), and blocks ctxwin carries untouched (``thinking``,
  ``redacted_thinking``, images, documents, server tools and their results...); a
  document of plain text (``text`` or ``content`` source) counts by its text, not as
  media, and a result holding a ``tool_reference`` (the tools a tool search loaded) is
  never edited (:attr:`~ctxwin._core.model.ToolResult.loads_tools`);
- the system prompt stands outside the messages; a ``role: "system"`` message (the SDK's
  ``SystemMessageParam``: text, ``tool_addition``...; in the beta its ``content`` may be
  absent, ``output_config`` alone) is read as a system message;
- a top-level ``cache_control`` (automatic caching) takes one of the request's four
  breakpoints; with ``ttl: "1h"``, ctxwin's take the hour too (none may come before it).

Server tools (``server_tool_use``, ``web_search_tool_result``...) are paired by the server,
not by the client: they are opaque blocks, never calls or results. The API wants each
server tool's result after its ``server_tool_use`` ("must have a corresponding
`server_tool_use` block before it"), and the calls a program makes in code execution
(programmatic tool calling: a ``tool_use`` or ``server_tool_use`` whose ``caller`` names the
``server_tool_use`` running the program) may come messages after it: the adapter ties them
to it (:attr:`~ctxwin._core.model.Opaque.opens`, ``tie``), and drops keep them together.

Pairing: every ``tool_use`` of an assistant message is answered by a ``tool_result`` in the
very next message, a user message, and the results come before anything else in it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import NOT_JSON, compact_json, parse_json
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
from ctxwin._exceptions import FormatError
from ctxwin.formats._anthropic_media import OVERHEADS
from ctxwin.formats._base import Adapter, json_type, render_content, require, role_of
from ctxwin.formats._markers import ANTHROPIC, ONE_HOUR, anthropic_envelope_marks, automatic_hour

__all__ = ["AnthropicAdapter"]

_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}
_WIRE_ROLES: dict[Role, str] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "user",  # results travel in user messages
}
_ANTHROPIC_ONLY_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "document",
        "search_result",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        "container_upload",
        "tool_addition",
    }
)
_OTHER_FORMATS_ONLY_PARTS = frozenset(
    {"image_url", "input_audio", "file", "refusal", "input_text", "output_text", "input_image"}
)
_OTHER_FORMATS_MESSAGE_KEYS = ("tool_calls", "tool_call_id", "function_call", "parts", "type")
_TEXT_SOURCES = frozenset({"text", "content"})
"""Document sources whose content is text the model reads as such (a PDF, an image or a
file id is media)."""
_SYSTEM_MESSAGE_KEYS = ("clear_at", "output_config")
"""Keys only an Anthropic ``role: "system"`` message has (``BetaSystemMessageParam``)."""


def _is_anthropic_tool(tool: object) -> bool:
    """A tool definition only Anthropic writes: ``input_schema``, or a dated server tool."""
    if not isinstance(tool, Mapping):
        return False
    kind = tool.get("type")
    dated = isinstance(kind, str) and kind[-8:].isdigit() and kind[-9:-8] == "_"
    return "input_schema" in tool or dated


def _block_sign(block: object) -> int:
    """What a content block says of the format: -1 another format's part, 2 a block only
    Anthropic has, 1 a ``cache_control`` marker, 0 nothing."""
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        return 0  # malformed content is for parse to point at, not a sign
    t = block["type"]
    if t in _OTHER_FORMATS_ONLY_PARTS:
        return -1
    if t in _ANTHROPIC_ONLY_BLOCKS or (t == "image" and "source" in block):
        return 2
    return 1 if "cache_control" in block else 0


def _input(arguments: str) -> object:
    """A call's ``input`` object from its JSON arguments (anything else wrapped)."""
    value = parse_json(arguments)
    if value is NOT_JSON:
        value = arguments
    return value if isinstance(value, dict) else {"input": value}


class AnthropicAdapter(Adapter):
    name = "anthropic"
    container = "messages"
    wire_roles = frozenset(_ROLES)
    rules: ClassVar[PairingRules] = PairingRules(
        turn="message",
        placement="next_message",
        carrier="grouped",
        carrier_role="user",
        results_first=True,
        # "`tool_use` ids must be unique" across assistant messages too (NVIDIA-NeMo/
        # Switchyard#502: a backend that numbers its calls call_0... every turn)
        unique_ids=True,
        first_role="user",
        # with thinking on, the turn's first assistant message must start with its thinking
        turn_openers=frozenset({"thinking", "redacted_thinking"}),
    )
    envelope_keys = ("system", "tools", "output_config", "output_format")  # (the schema)
    overheads = OVERHEADS  # inline images and PDFs by their size and pages
    system_keys = ("system",)

    def marker_of(self, item: Mapping[str, Any]) -> bool:
        return ANTHROPIC.in_list(item.get("content"))

    def marker_value(self, item: object) -> Mapping[str, Any] | None:
        found = ANTHROPIC.values(item)
        return found[-1] if found else None

    def set_marker(self, item: dict[str, Any], on: bool | Mapping[str, Any]) -> dict[str, Any]:
        content = ANTHROPIC.as_parts(item.get("content"))
        if isinstance(content, list):
            item["content"] = ANTHROPIC.marked_list(content, on)
        return item

    def envelope_marks(self, body: object) -> int:
        return anthropic_envelope_marks(body)

    def default_marker(self, conv: Conversation) -> Mapping[str, Any] | None:
        return ONE_HOUR if automatic_hour(conv.source) else None  # (an hour's: see there)

    def opaque(self, kind: str, raw: object) -> Opaque:
        """An opaque block: a document of plain text (``text`` or ``content`` source) is
        counted by its text, not as media; the ``tool_reference`` of a tool search loads a
        tool definition (``fixed``: a result holding one is never cleared)."""
        if kind == "tool_reference":
            return Opaque(kind, raw=raw, category="fixed")
        if kind == "document" and isinstance(raw, Mapping):
            source = raw.get("source")
            of = source.get("type") if isinstance(source, Mapping) else None
            if isinstance(of, str) and of in _TEXT_SOURCES:
                return Opaque(kind, raw=raw, category="other")
        return super().opaque(kind, raw)

    def from_object(self, data: dict[str, Any]) -> dict[str, Any]:
        """An SDK ``Message`` (a response) in the history: its role and content only."""
        if data.get("type") == "message" and "role" in data:
            return {"role": data["role"], "content": data.get("content", [])}
        return data

    # ---------------------------------------------------------------- detection

    def detect(self, body: object) -> int:
        if isinstance(body, Mapping):
            if "contents" in body or "input" in body:
                return 0  # Gemini, OpenAI Responses
            items = body.get("messages")
        else:
            items = body
        if not isinstance(items, list):
            return 0
        sure = cached = chat_system = False
        if isinstance(body, Mapping):
            tools = body.get("tools")
            if "system" in body or (
                isinstance(tools, list) and any(_is_anthropic_tool(t) for t in tools)
            ):
                sure = True
            elif isinstance(tools, list) and any(
                isinstance(t, Mapping) and "function" in t for t in tools
            ):
                return 0  # OpenAI Chat tool definitions
        for m in items:
            role = m.get("role") if isinstance(m, Mapping) else None
            if not isinstance(role, str) or role not in _ROLES:
                return 0
            if any(k in m for k in _OTHER_FORMATS_MESSAGE_KEYS):
                return 0
            content = m.get("content")
            if "content" in m and content is None:
                return 0  # OpenAI Chat's assistant message with only tool calls
            if role == "system":
                sure = sure or any(k in m for k in _SYSTEM_MESSAGE_KEYS)
                chat_system = chat_system or isinstance(content, str)
            for block in content if isinstance(content, list) else ():
                sign = _block_sign(block)
                if sign < 0:
                    return 0
                sure = sure or sign == 2
                cached = cached or sign == 1
        if chat_system and not sure:
            # an OpenAI Chat system prompt, unless something only Anthropic has says
            # otherwise (Anthropic takes one as a message too: SystemMessageParam); a
            # cache_control alone does not (LiteLLM takes it in OpenAI Chat bodies)
            return 0
        return 2 if sure or cached else (1 if items else 0)

    # ---------------------------------------------------------------- parse

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        path = self.path(index)
        role = role_of(raw, _ROLES, path=path, format=self.name)
        content = raw.get("content")
        if isinstance(content, str):
            blocks: tuple[Block, ...] = (Text(content, raw=content, pristine=True),)
        elif role == "system" and "content" not in raw:
            blocks = ()  # a system message may carry only its output_config
        else:
            if not isinstance(content, list):
                found = f"not {json_type(content)}" if "content" in raw else "and is missing"
                raise FormatError(
                    f"'content' must be a string or a list of blocks, {found}",
                    path=f"{path}.content",
                    format=self.name,
                )
            blocks = tuple(self._block(b, f"{path}.content[{k}]") for k, b in enumerate(content))
        return Message(role, blocks, raw=raw, pristine=True, index=index)

    def _block(self, block: object, path: str) -> Block:
        require(
            isinstance(block, Mapping),
            "a content block must be an object",
            path=path,
            format=self.name,
        )
        assert isinstance(block, Mapping)
        kind = block.get("type")
        if kind == "text":
            return Text(self._string(block, "text", path), raw=block, pristine=True)
        if kind == "tool_use":
            cid = self._string(block, "id", path)
            name = self._string(block, "name", path)
            given = block.get("input", {})
            require(
                isinstance(given, Mapping),
                f"a tool_use's 'input' must be an object, not {json_type(given)}",
                path=f"{path}.input",
                format=self.name,
            )
            args = compact_json(given)
            return ToolCall(cid, name, args, raw=block, pristine=True, tie=_caller(block))
        if kind == "tool_result":
            flag = block.get("is_error", False)
            require(
                isinstance(flag, bool),
                f"'is_error' must be true or false, not {json_type(flag)} {flag!r}"[:200],
                path=f"{path}.is_error",
                format=self.name,
            )
            return ToolResult(
                call_id=self._string(block, "tool_use_id", path),
                content=self._parts(block.get("content"), f"{path}.content"),
                is_error=flag,
                raw=block,
                pristine=True,
            )
        if not isinstance(kind, str):
            return self.opaque("unknown", block)
        return _tied(self.opaque(kind, block), kind, block)

    def _string(self, block: Mapping[str, Any], key: str, path: str) -> str:
        value = block.get(key)
        if not isinstance(value, str):
            raise FormatError(
                f"a {block.get('type')} block needs a string {key!r}",
                path=f"{path}.{key}",
                format=self.name,
            )
        return value

    def _parts(self, content: object, path: str) -> tuple[Part, ...]:
        if content is None:
            return ()
        if isinstance(content, str):
            return (Text(content, raw=content, pristine=True),)
        require(
            isinstance(content, list),
            "a tool_result's 'content' must be a string or a list of blocks, not "
            + json_type(content),
            path=path,
            format=self.name,
        )
        assert isinstance(content, list)
        return self.parts(content, path, what="a content block")

    # ---------------------------------------------------------------- render

    def render_message(self, msg: Message, conv: Conversation) -> object:
        raw = msg.raw if isinstance(msg.raw, Mapping) else None
        if raw is None:
            return {
                "role": _WIRE_ROLES[msg.role],
                "content": [self._render_block(b) for b in msg.blocks],
            }
        out = dict(raw)
        if _ROLES.get(raw.get("role", "")) != msg.role:
            out["role"] = _WIRE_ROLES[msg.role]
        content = raw.get("content")
        blocks = msg.blocks
        if isinstance(content, str) and len(blocks) == 1 and isinstance(blocks[0], Text):
            out["content"] = blocks[0].text
        elif "content" not in raw and not blocks:
            pass  # a system message without content stays without
        elif not (
            isinstance(content, list)
            and len(content) == len(blocks)
            and all(b.pristine and b.raw is c for b, c in zip(blocks, content, strict=True))
        ):
            out["content"] = [self._render_block(b) for b in blocks]
        return out

    def _render_block(self, block: Block) -> object:
        raw = block.raw if isinstance(block.raw, Mapping) else None
        if isinstance(block, Opaque):
            return block.raw if block.raw is not None else {"type": block.kind}
        if block.pristine and raw is not None:
            return raw
        if isinstance(block, Text):
            return {**raw, "text": block.text} if raw is not None else _text_block(block.text)
        if isinstance(block, ToolCall):
            out = dict(raw) if raw is not None else {"type": "tool_use"}
            out["id"] = block.id
            out["name"] = block.name
            if raw is None or compact_json(raw.get("input", {})) != block.arguments:
                out["input"] = _input(block.arguments)
            return out
        if raw is None:
            synthetic: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": block.call_id,
                "content": _result_content(block.content, None),
            }
            if block.is_error:
                synthetic["is_error"] = True
            return synthetic
        out = dict(raw)
        out["tool_use_id"] = block.call_id
        original = raw.get("content")
        if not _same_parts(block.content, original):
            out["content"] = _result_content(block.content, original)
        if block.is_error != bool(raw.get("is_error")):
            out["is_error"] = block.is_error
        return out

    # ---------------------------------------------------------------- reporting

    def block_path(self, msg: Message, block: int) -> str:
        raw = msg.raw if isinstance(msg.raw, Mapping) else {}
        path = f"{self.path(msg.index)}.content"
        return path if isinstance(raw.get("content"), str) else f"{path}[{block}]"

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        msg = conv.messages[loc[0]]
        i = "?" if msg.index is None else msg.index
        if code == "missing_result":
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {call_id}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        block = msg.blocks[loc[1]] if loc[1] < len(msg.blocks) else None
        if code == "orphan_result" and isinstance(block, ToolCall):  # its program is gone
            return (
                f"messages.{i}.content.{loc[1]}: the `tool_use` block {call_id} names "
                f"`caller.tool_id` {block.tie}, but no `server_tool_use` block before it "
                "has that id"
            )
        if code == "orphan_result" and isinstance(block, Opaque):
            if block.kind in _OPENERS:  # made by a program whose server_tool_use is gone
                return (
                    f"messages.{i}.content.{loc[1]}: the `{block.kind}` block names "
                    f"`caller.tool_id` {call_id}, but no `server_tool_use` block before it "
                    "has that id"
                )
            opener = "mcp_tool_use" if block.kind == "mcp_tool_result" else "server_tool_use"
            return (
                f"messages.{i}.content.{loc[1]}: unexpected `tool_use_id` found in "
                f"`{block.kind}` blocks: {call_id}. Each `{block.kind}` block must have a "
                f"corresponding `{opener}` block before it."
            )
        if code in ("misplaced_result", "orphan_result"):
            return (
                f"messages.{i}.content.{loc[1]}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {call_id}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message."
            )
        if code == "results_not_first":
            n = len(conv.messages[loc[0] - 1].tool_calls) if loc[0] > 0 else 0
            return (
                f"messages.{i}: Did not find {n} `tool_result` block(s) at the beginning of "
                "this message. Messages following `tool_use` blocks must begin with a "
                "matching number of `tool_result` blocks."
            )
        if code == "duplicate_call_id":
            return f"messages.{i}: `tool_use` ids must be unique"
        if code == "first_not_user":
            return 'messages: first message must use the "user" role'
        if code == "duplicate_result":
            return (
                f"a second `tool_result` block for tool_use_id {call_id}: the call was "
                "already answered"
            )
        if code == "empty_result":
            return "the `tool_result` block's content is empty"
        return code


_OPENERS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Blocks making a call the server runs, answered by a ``*_tool_result`` block naming their
``id`` in ``tool_use_id`` (``mcp_tool_result`` for ``mcp_tool_use``)."""


def _caller(block: Mapping[str, Any]) -> str | None:
    """The ``server_tool_use`` whose program made this call (``caller.tool_id``), if any."""
    caller = block.get("caller")
    if not isinstance(caller, Mapping) or caller.get("type") == "direct":
        return None
    tool_id = caller.get("tool_id")
    return tool_id if isinstance(tool_id, str) else None


def _tied(part: Opaque, kind: str, block: Mapping[str, Any]) -> Opaque:
    """An opaque block with what ties it to a server tool's call in other messages: a
    ``server_tool_use`` opens its ``id`` (and is tied to the program that made it, if one
    did); a server tool's result is tied to its ``tool_use_id``."""
    opens = tie = None
    if kind in _OPENERS:
        opens = block.get("id") if isinstance(block.get("id"), str) else None
        tie = _caller(block)
    elif kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str):
        tie = block["tool_use_id"]
        return dataclasses.replace(part, tie=tie, closes=True)
    if opens is None and tie is None:
        return part
    return dataclasses.replace(part, opens=opens, tie=tie)


def _text_block(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


def _same_parts(parts: tuple[Part, ...], original: object) -> bool:
    """Whether a result's parts are still exactly its original content."""
    if isinstance(original, list):
        return len(parts) == len(original) and all(
            p.pristine and p.raw is o for p, o in zip(parts, original, strict=True)
        )
    if isinstance(original, str):
        return len(parts) == 1 and parts[0].pristine and parts[0].raw is original
    return not parts


def _result_content(parts: tuple[Part, ...], original: object) -> object:
    """A result's content in the shape it had: a string stays a string when it can."""
    return render_content(parts, original, missing="")
