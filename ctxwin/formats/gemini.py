"""Gemini ``generateContent``: ``{"contents": [...], "systemInstruction"?, "tools"?}``.

- each content is ``{"role": "user" | "model", "parts": [...]}`` (a missing role is
  ``user``); parts are ``text``, ``functionCall``, ``functionResponse``, thoughts
  (``"thought": true``) and media or code parts, which are carried untouched. The SDK's
  shorthands (``contents="..."``, a list of parts for one user content) are refused;
- calls may have no ``id``: results then pair with calls by order and name;
- a result is a ``functionResponse`` part whose ``response`` is an object, by convention
  ``{"output": ...}`` or ``{"error": ...}`` (an error when ``error`` holds something; an
  edited error stays one). Its text is the string of a response of one string, the JSON
  of the object or array that an ``output`` or ``result`` alone wraps (google-genai's
  automatic function calling sends a function's value as ``{"result": ...}``), written
  back under that key, else the JSON of the whole response;
- field names come in camelCase (REST, ``functionCall``) or snake_case (the Python SDK,
  ``function_call``); the body's style is kept as the conversation's ``dialect`` and new
  parts are written in it. A field set to ``null`` is unset (proto3 JSON, and what a
  ``model_dump()`` of a google-genai object holds), and counts nothing;
- ``bytes`` (``thought_signature`` and ``inline_data.data`` in a ``model_dump()``) go out as
  the URL-safe base64 text the SDK itself sends them as, which it reads back as those bytes;
- the request pays for ``systemInstruction`` and ``tools``, at the top of the body (REST) or
  in its ``config`` (the SDK's ``generate_content(model=, contents=, config=)``), SDK
  objects included; an inline PDF counts by its pages and an image at Gemini 3's default
  cost (:mod:`ctxwin.formats._gemini_media`).

Pairing: all the function responses answering a model turn's calls stand together in the
content right after it, one response part per call part.
"""

from __future__ import annotations

import base64
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
from ctxwin._exceptions import FormatError
from ctxwin.formats._base import Adapter, json_type, require, role_of
from ctxwin.formats._gemini_config import (
    CONFIG_KEYS,
    SCHEMA_KEYS,
    config_field,
    schema_plain,
    sdk_plain,
)
from ctxwin.formats._gemini_media import OVERHEADS
from ctxwin.formats._gemini_objects import sdk_values
from ctxwin.formats._gemini_parts import (
    CALL,
    DATA_FIELDS,
    RESPONSE,
    STYLED_KEYS,
    call_args,
    is_error_response,
    kind,
    object_or_output,
    response_text,
    single_string_key,
    spelling,
    under_key,
    wrapper_key,
)
from ctxwin.formats._objects import rebuilt

__all__ = ["GeminiAdapter"]

_ROLES: dict[str, Role] = {
    "user": "user",
    "model": "assistant",
    # The older API sent function responses in contents of role "function". They carry
    # results, as "user" contents do today, so they are user messages here: repair then
    # reuses such a content as the carrier of its turn's results (keeping its role).
    "function": "user",
}
_CONTENT_KEYS = frozenset({"role", "parts"})
"""The fields of a content (``types.Content``; the API refuses any other)."""
_CACHED = ("cachedContent", "cached_content")
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


def _base64(value: object) -> object:
    """``bytes`` as the SDK sends them (URL-safe base64 text); anything else as it is."""
    if isinstance(value, (bytes, bytearray)):
        return base64.urlsafe_b64encode(value).decode("ascii")
    return value


def _new_response(response: object, res: ToolResult) -> object:
    """The response for a result's new text, of the same shape as the old one where it can
    be: a ``{"output": "..."}``-like one as the new string, a ``{"result": {...}}``-like
    one under the same key (the data it wraps is what the steps edited), else the object
    the text spells or ``{"output": text}`` (:func:`object_or_output`)."""
    single = single_string_key(response)
    if single == "error" and not res.is_error:  # {"error": ""} is no error
        single = None
    if single:
        return {single: res.text}
    wrapper = wrapper_key(response)
    if wrapper and not res.is_error:
        return under_key(wrapper, res.text)
    return object_or_output(res.text, res.is_error)


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
        # parallel calls go back as one content, only the first signed (python-genai's
        # streaming chat records each chunk as a content of its own: repair joins them)
        merge_split_turns=True,
        first_role="user",  # before a model turn with calls (not under cachedContent)
        first_calls_only=True,
    )
    envelope_keys = ("systemInstruction", "system_instruction", "tools")
    system_keys = ("systemInstruction", "system_instruction")
    media_words = (*Adapter.media_words, "inlinedata")
    overheads = OVERHEADS  # nulls unset (not billed); PDFs by their pages, images at 1,120

    # ---------------------------------------------------------------- detection

    def detect(self, body: object) -> int:
        if isinstance(body, Mapping):
            markers = ("contents", "systemInstruction", "system_instruction")
            return 2 if any(k in body for k in markers) else 0
        if isinstance(body, list) and body:
            return 2 if all(isinstance(c, Mapping) and "parts" in c for c in body) else 0
        return 0

    def server_state(self, body: object, refers: bool | None = None) -> bool:
        """A ``cachedContent`` (of the body or its SDK ``config``): contents the provider
        prepends and bills, which may hold the calls the request's responses answer."""
        if not isinstance(body, Mapping) or any(body.get(k) for k in _CACHED):
            return isinstance(body, Mapping)
        config = body.get("config")
        return config is not None and any(config_field(config, k) for k in _CACHED)

    def dialect(self, body: object) -> str:
        """``"snake"`` or ``"camel"``: the style of the first styled part field
        (``function_call``...), else of the body's own keys (``system_instruction``...)."""
        items = body.get(self.container) if isinstance(body, Mapping) else body
        for content in items if isinstance(items, list) else ():
            parts = content.get("parts") if isinstance(content, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping):
                    style = next((STYLED_KEYS[k] for k in part if k in STYLED_KEYS), None)
                    if style is not None:
                        return style
        if isinstance(body, Mapping):
            style = next((_BODY_STYLE[k] for k in body if k in _BODY_STYLE), None)
            if style is not None:
                return style
        return "camel"

    def envelope(self, body: object) -> tuple[tuple[str, object], ...]:
        """``systemInstruction``, ``tools`` and the response schema (of ``generationConfig``),
        of the body or of its ``config`` (a dict or a ``GenerateContentConfig``), as JSON
        data, each after its path (``config.tools``, ``generationConfig.responseSchema``)."""
        if not isinstance(body, Mapping):
            return ()
        found = [(k, body.get(k)) for k in self.envelope_keys]
        name = "generationConfig" if "generationConfig" in body else "generation_config"
        generation = body.get(name)
        if isinstance(generation, Mapping):
            found += [(f"{name}.{k}", generation.get(k)) for k in SCHEMA_KEYS]
        config = body.get("config")
        if config is not None:
            found += [
                (f"config.{k}", sdk_plain(v))
                for k in CONFIG_KEYS
                if (v := config_field(config, k)) is not None
            ]
            found += [(f"config.{k}", schema_plain(config_field(config, k))) for k in SCHEMA_KEYS]
        return tuple((k, v) for k, v in found if v is not None)

    # ---------------------------------------------------------------- parse

    def plain_item(self, raw: object, index: int) -> Mapping[str, Any]:
        """A content as plain data; ``bytes`` in it as the SDK sends them (base64 text), and
        so the user's models in an SDK object's ``args`` and ``response`` (see
        :mod:`ctxwin.formats._gemini_objects`)."""
        raw = sdk_values(raw)
        try:
            return super().plain_item(raw, index)
        except FormatError:
            encoded = rebuilt(raw, _base64)
            if encoded is raw:
                raise
            return super().plain_item(encoded, index)

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        path = self.path(index)
        if any(k not in _CONTENT_KEYS for k in raw):
            self._not_a_content(raw, path)
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

    def _not_a_content(self, raw: Mapping[str, Any], path: str) -> None:
        """Refuse what stands in place of a content: a part (the SDK's shorthand), the
        SDK's response or one of its candidates (the model's content is inside), or a
        content with a field the API does not have (it answers 400 "Unknown name")."""
        stray = next((k for k in raw if k in DATA_FIELDS), None)
        if stray is not None:
            raise FormatError(
                f"a content holds 'role' and 'parts', not a part's {stray!r}: put the parts "
                'in {"role": "user", "parts": [...]} (the SDK\'s list of parts is not read)',
                path=f"{path}.{stray}",
                format=self.name,
            )
        whole = next((k for k in ("candidates", "content") if k in raw), None)
        if whole is not None:
            what = "a response" if whole == "candidates" else "a candidate of a response"
            raise FormatError(
                f"this is {what} (it has {whole!r}), not a content: append the model's "
                "content, response.candidates[0].content",
                path=path,
                format=self.name,
            )
        extra = next(k for k in raw if k not in _CONTENT_KEYS)
        raise FormatError(
            f"a content holds 'role' and 'parts' only, not {extra!r}",
            path=f"{path}.{extra}",
            format=self.name,
        )

    def _an_object(self, value: object, path: str, what: str, wrap: str) -> None:
        """Gemini takes ``args`` and ``response`` as JSON objects (a protobuf Struct) only."""
        require(
            value is None or isinstance(value, Mapping),
            f'{what} must be an object, not {json_type(value)} (wrap it: {{"{wrap}": ...}})',
            path=path,
            format=self.name,
        )

    def _block(self, part: object, path: str) -> Block:
        require(isinstance(part, Mapping), "a part must be an object", path=path, format=self.name)
        assert isinstance(part, Mapping)
        data = [k for k, v in part.items() if k in DATA_FIELDS and v is not None]
        require(
            len(data) <= 1,
            f"a part holds one kind of data, not {len(data)} ({', '.join(data)}): "
            "put each in a part of its own",
            path=path,
            format=self.name,
        )
        key = spelling(part, CALL)
        if key is not None:
            fc = self._named(part[key], f"{path}.{key}")
            args = fc.get("args")
            self._an_object(args, f"{path}.{key}.args", "a call's 'args'", "input")
            return ToolCall(
                fc.get("id"),
                fc["name"],
                compact_json({} if args is None else args),
                raw=part,
                pristine=True,
            )
        key = spelling(part, RESPONSE)
        if key is not None:
            fr = self._named(part[key], f"{path}.{key}")
            response = fr.get("response")
            self._an_object(
                response, f"{path}.{key}.response", "a function response's 'response'", "output"
            )
            media = fr.get("parts")
            require(
                media is None or isinstance(media, list),
                "'parts' must be a list",
                path=f"{path}.{key}.parts",
                format=self.name,
            )
            content: tuple[Part, ...] = (
                Text(response_text(response), raw=response, pristine=True),
                *(
                    self.opaque(kind(p) if isinstance(p, Mapping) else "unknown", p)
                    for p in media or ()
                ),
            )
            return ToolResult(
                call_id=fr.get("id"),
                content=content,
                is_error=is_error_response(response),
                name=fr["name"],
                raw=part,
                pristine=True,
            )
        if part.get("thought") is not True and isinstance(part.get("text"), str):
            return Text(part["text"], raw=part, pristine=True)
        return self.opaque(kind(part), part)

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
            key = spelling(raw, CALL) or CALL[style]
            old_fc = raw.get(key)
            fc = dict(old_fc) if isinstance(old_fc, Mapping) else {}
            if block.id is not None:
                fc["id"] = block.id
            fc["name"] = block.name
            old = fc.get("args")
            if old_fc is None or compact_json({} if old is None else old) != block.arguments:
                fc["args"] = call_args(block.arguments)
            return {**raw, key: fc}
        return self._render_result(block, raw, spelling(raw, RESPONSE) or RESPONSE[style])

    def _render_result(self, res: ToolResult, raw: Mapping[str, Any], key: str) -> object:
        old_fr = raw.get(key)
        if not isinstance(old_fr, Mapping):
            fr: dict[str, object] = {} if res.call_id is None else {"id": res.call_id}
            fr["name"] = res.name or ""
            fr["response"] = {"error": res.text} if res.is_error else object_or_output(res.text)
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
            fr["response"] = _new_response(response, res)
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
        if code == "first_not_user":
            return (
                "Please ensure that function call turn comes immediately after a user turn "
                "or after a function response turn."
            )
        return code
