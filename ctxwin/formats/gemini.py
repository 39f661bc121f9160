"""Gemini ``generateContent``: ``{"contents": [...], "systemInstruction"?, "tools"?}``.

- each content is ``{"role": "user" | "model", "parts": [...]}`` (a missing role is
  ``user``); parts are ``text``, ``functionCall``, ``functionResponse``, thoughts
  (``"thought": true``) and media or code parts, which are carried untouched;
- calls may have no ``id``: results then pair with calls by order and name;
- a result is a ``functionResponse`` part whose ``response`` is an object, by convention
  ``{"output": ...}`` or ``{"error": ...}``;
- field names come in camelCase (REST, ``functionCall``) or snake_case (the Python SDK,
  ``function_call``); the body's style is kept as the conversation's ``dialect`` and new
  parts are written in it.

Pairing: all the function responses answering a model turn's calls stand together in the
content right after it, one response part per call part.
"""

from __future__ import annotations

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
from ctxwin.formats._base import Adapter, json_type, require, role_of

__all__ = ["GeminiAdapter"]

_ROLES: dict[str, Role] = {
    "user": "user",
    "model": "assistant",
    # The older API sent function responses in contents of role "function". They carry
    # results, as "user" contents do today, so they are user messages here: repair then
    # reuses such a content as the carrier of its turn's results (keeping its role).
    "function": "user",
}
_CALL = ("functionCall", "function_call")
_RESPONSE = ("functionResponse", "function_response")
_META = {
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
    "mediaResolution",
    "media_resolution",
}
"""Part fields that say something about the part's data rather than being it."""
_DATA_FIELDS = frozenset(
    {
        "text",
        "inlineData",
        "inline_data",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "fileData",
        "file_data",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
    }
)
"""A part's data fields: the API takes exactly one per part (a ``oneof``)."""
_STYLED_KEYS = {
    "functionCall": "camel",
    "functionResponse": "camel",
    "inlineData": "camel",
    "fileData": "camel",
    "thoughtSignature": "camel",
    "executableCode": "camel",
    "codeExecutionResult": "camel",
    "function_call": "snake",
    "function_response": "snake",
    "inline_data": "snake",
    "file_data": "snake",
    "thought_signature": "snake",
    "executable_code": "snake",
    "code_execution_result": "snake",
}
_BODY_STYLE = {
    "systemInstruction": "camel",
    "toolConfig": "camel",
    "generationConfig": "camel",
    "safetySettings": "camel",
    "cachedContent": "camel",
    "system_instruction": "snake",
    "tool_config": "snake",
    "generation_config": "snake",
    "safety_settings": "snake",
    "cached_content": "snake",
}


def _key(part: Mapping[str, Any], names: tuple[str, str]) -> str | None:
    """Which spelling of a field the part uses, if any."""
    return names[0] if names[0] in part else names[1] if names[1] in part else None


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _kind(part: Mapping[str, Any]) -> str:
    """The kind of an uninterpreted part: its data field, in camelCase (``inlineData``)."""
    if part.get("thought") is True:
        return "thought"
    return next((_camel(str(k)) for k in part if k not in _META), "unknown")


def _single_string_key(response: object) -> str | None:
    """The key of a ``{"output": "..."}``-like response: one key, a string value."""
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if isinstance(value, str):
            return str(key)
    return None


def _response_text(response: object) -> str:
    if response is None:
        return ""
    key = _single_string_key(response)
    if key is not None:
        assert isinstance(response, Mapping)
        return str(response[key])
    return compact_json(response)


def _object_or_output(text: str) -> object:
    """A response for new text: the text itself when it is a JSON object."""
    value = parse_json(text)
    return value if isinstance(value, dict) else {"output": text}


def _args(arguments: str) -> object:
    """Call arguments as Gemini wants them: an object (other text is kept as ``input``)."""
    value = parse_json(arguments)
    if value is NOT_JSON:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


class GeminiAdapter(Adapter):
    name = "gemini"
    container = "contents"
    wire_roles = frozenset(_ROLES)
    rules: ClassVar[PairingRules] = PairingRules(
        turn="message",
        placement="next_message",
        carrier="grouped",
        carrier_role="user",
        ids_optional=True,  # calls without ids pair by order and name
    )
    envelope_keys = ("systemInstruction", "system_instruction", "tools")
    media_words = (*Adapter.media_words, "inlinedata")

    # ---------------------------------------------------------------- detection

    def detect(self, body: object) -> int:
        if isinstance(body, Mapping):
            markers = ("contents", "systemInstruction", "system_instruction")
            return 2 if any(k in body for k in markers) else 0
        if isinstance(body, list) and body:
            return 2 if all(isinstance(c, Mapping) and "parts" in c for c in body) else 0
        return 0

    def dialect(self, body: object) -> str:
        """``"snake"`` or ``"camel"``: the style of the first styled part field
        (``function_call``...), else of the body's own keys (``system_instruction``...)."""
        items = body.get(self.container) if isinstance(body, Mapping) else body
        for content in items if isinstance(items, list) else ():
            parts = content.get("parts") if isinstance(content, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping):
                    style = next((_STYLED_KEYS[k] for k in part if k in _STYLED_KEYS), None)
                    if style is not None:
                        return style
        if isinstance(body, Mapping):
            style = next((_BODY_STYLE[k] for k in body if k in _BODY_STYLE), None)
            if style is not None:
                return style
        return "camel"

    # ---------------------------------------------------------------- parse

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        path = self.path(index)
        role = role_of(raw, _ROLES, path=path, format=self.name, default="user")
        parts = raw.get("parts")
        if parts is None:
            return Message(role, (), raw=raw, pristine=True, index=index)
        require(
            isinstance(parts, list),
            f"'parts' must be a list, not {json_type(parts)}",
            path=f"{path}.parts",
            format=self.name,
        )
        blocks = tuple(self._block(p, f"{path}.parts[{k}]") for k, p in enumerate(parts))
        return Message(role, blocks, raw=raw, pristine=True, index=index)

    def _an_object(self, value: object, path: str, what: str) -> None:
        """Gemini takes ``args`` and ``response`` as JSON objects (a protobuf Struct) only."""
        require(
            value is None or isinstance(value, Mapping),
            f'{what} must be an object, not {json_type(value)} (wrap it: {{"output": ...}})',
            path=path,
            format=self.name,
        )

    def _block(self, part: object, path: str) -> Block:
        require(isinstance(part, Mapping), "a part must be an object", path=path, format=self.name)
        assert isinstance(part, Mapping)
        data = [k for k in part if k in _DATA_FIELDS]
        require(
            len(data) <= 1,
            f"a part holds one kind of data, not {len(data)} ({', '.join(data)}): "
            "put each in a part of its own",
            path=path,
            format=self.name,
        )
        key = _key(part, _CALL)
        if key is not None:
            fc = self._named(part[key], f"{path}.{key}")
            args = fc.get("args")
            self._an_object(args, f"{path}.{key}.args", "a call's 'args'")
            return ToolCall(
                fc.get("id"),
                fc["name"],
                compact_json({} if args is None else args),
                raw=part,
                pristine=True,
            )
        key = _key(part, _RESPONSE)
        if key is not None:
            fr = self._named(part[key], f"{path}.{key}")
            response = fr.get("response")
            self._an_object(response, f"{path}.{key}.response", "a function response's 'response'")
            media = fr.get("parts")
            require(
                media is None or isinstance(media, list),
                "'parts' must be a list",
                path=f"{path}.{key}.parts",
                format=self.name,
            )
            content: tuple[Part, ...] = (
                Text(_response_text(response), raw=response, pristine=True),
                *(
                    self.opaque(_kind(p) if isinstance(p, Mapping) else "unknown", p)
                    for p in media or ()
                ),
            )
            return ToolResult(
                call_id=fr.get("id"),
                content=content,
                is_error=isinstance(response, Mapping) and "error" in response,
                name=fr["name"],
                raw=part,
                pristine=True,
            )
        if part.get("thought") is not True and isinstance(part.get("text"), str):
            return Text(part["text"], raw=part, pristine=True)
        return self.opaque(_kind(part), part)

    def _named(self, value: object, path: str) -> Mapping[str, Any]:
        """A functionCall / functionResponse object: needs a string name, maybe a string id."""
        field = path.rsplit(".", 1)[-1]
        require(
            isinstance(value, Mapping) and isinstance(value.get("name"), str),
            f"a {field} part needs a string 'name'",
            path=path,
            format=self.name,
        )
        assert isinstance(value, Mapping)
        require(
            value.get("id") is None or isinstance(value.get("id"), str),
            f"a {field} 'id' must be a string",
            path=f"{path}.id",
            format=self.name,
        )
        return value

    # ---------------------------------------------------------------- render

    def render_message(self, msg: Message, conv: Conversation) -> object:
        raw = msg.raw if isinstance(msg.raw, Mapping) else None
        if raw is None:
            out: dict[str, object] = {"role": "model" if msg.role == "assistant" else "user"}
        else:
            out = dict(raw)
        if raw is None or msg.blocks or "parts" in raw:
            out["parts"] = [self._render_block(b, conv) for b in msg.blocks]
        return out

    def _render_block(self, block: Block, conv: Conversation) -> object:
        if block.pristine or isinstance(block, Opaque):
            return block.raw
        raw: Mapping[str, Any] = block.raw if isinstance(block.raw, Mapping) else {}
        style = 1 if conv.dialect == "snake" else 0
        if isinstance(block, Text):
            return {**raw, "text": block.text}
        if isinstance(block, ToolCall):
            key = _key(raw, _CALL) or _CALL[style]
            old_fc = raw.get(key)
            fc = dict(old_fc) if isinstance(old_fc, Mapping) else {}
            if block.id is not None:
                fc["id"] = block.id
            fc["name"] = block.name
            old = fc.get("args")
            if old_fc is None or compact_json({} if old is None else old) != block.arguments:
                fc["args"] = _args(block.arguments)
            return {**raw, key: fc}
        return self._render_result(block, raw, _key(raw, _RESPONSE) or _RESPONSE[style])

    def _render_result(self, res: ToolResult, raw: Mapping[str, Any], key: str) -> object:
        old_fr = raw.get(key)
        if not isinstance(old_fr, Mapping):
            fr: dict[str, object] = {} if res.call_id is None else {"id": res.call_id}
            fr["name"] = res.name or ""
            fr["response"] = {"error": res.text} if res.is_error else _object_or_output(res.text)
            media = [p.raw for p in res.content if isinstance(p, Opaque)]
            if media:
                fr["parts"] = media
            return {key: fr}
        fr = dict(old_fr)
        if res.call_id is not None:
            fr["id"] = res.call_id
        if res.name is not None:
            fr["name"] = res.name
        response = fr.get("response")
        texts = [p for p in res.content if isinstance(p, Text)]
        if not (len(texts) == 1 and texts[0].pristine and texts[0].raw is response):
            single = _single_string_key(response)
            fr["response"] = {single: res.text} if single else _object_or_output(res.text)
        media = [p.raw for p in res.content if isinstance(p, Opaque)]
        old_media = fr.get("parts")
        if not (
            isinstance(old_media, list)
            and len(old_media) == len(media)
            and all(a is b for a, b in zip(media, old_media, strict=True))
        ):
            if media:
                fr["parts"] = media
            else:
                fr.pop("parts", None)
        return {**raw, key: fr}

    # ---------------------------------------------------------------- reporting

    def block_path(self, msg: Message, block: int) -> str:
        return f"{self.path(msg.index)}.parts[{block}]"

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        msg = conv.messages[loc[0]]
        block = msg.blocks[loc[1]]
        name = getattr(block, "name", None)
        what = f"id {call_id}" if call_id else f"name {name}"
        if code in ("missing_result", "misplaced_result"):
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        if code == "orphan_result":
            return (
                "Please ensure that function response turn comes immediately after a "
                "function call turn."
            )
        if code == "duplicate_result":
            return f"a second function response for the call with {what}: it was already answered"
        if code == "duplicate_call_id":
            return f"function call id {call_id} appears twice in {self.path(msg.index)}.parts"
        if code == "empty_result":
            return "the function response is empty"
        return code
