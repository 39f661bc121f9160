"""OpenAI Responses: ``{"input": [...] or "text", "instructions"?, "previous_response_id"?}``.

One neutral message per input item (a bare list of items is accepted too):

- ``message`` items and their short form ``{"role", "content"}``; ``developer`` is a system
  message; ``content`` is a string or a list of parts (``input_text``, ``output_text`` and
  ``text`` are text; images, files, audio, refusals and unknown parts are opaque; another
  format's call or result, Anthropic's ``tool_use`` or Gemini's ``functionCall``, is refused);
- client-run calls and their outputs, paired by ``call_id``: ``function_call`` /
  ``function_call_output``, ``custom_tool_call`` / ``custom_tool_call_output``, and the
  built-in ``local_shell``, ``shell``, ``apply_patch`` and ``computer`` calls, whose kind and
  name are the type stem and whose arguments are their ``action`` (``operation``) as JSON;
  a ``shell_call_output`` chunk's text is its stdout then its stderr;
- a tool search the client runs (``tool_search_call`` / ``tool_search_output`` with a
  ``call_id``, ``execution: "client"`` or left out), paired the same way; the output's
  ``tools`` are definitions the model loads, not text: nothing to clear or cap, written back
  as they came. The server's own (``execution: "server"``, no ``call_id``) is opaque;
- ``reasoning`` items (with ``encrypted_content``) and the items of server-run tools (web
  and file search, MCP, image generation, code interpreter, compaction...) are opaque
  assistant items, carried untouched;
- programmatic tool calling: a ``program`` item (the code the server runs, with the
  ``fingerprint`` it replays it by), the items it makes (calls and server tools' items whose
  ``caller`` is ``{"type": "program", "caller_id": ...}``, a ``function_call_output``
  without a ``call_id`` among them) and its ``program_output`` span turns: they are tied
  together (:attr:`~ctxwin._core.model.Opaque.opens`, ``tie``); drops take or leave them whole;
- ``input`` given as a string is one user message, rendered back as such while unedited.

Pairing: a run of assistant items (reasoning, function_call...) is one turn; each output is
an item of its own, anywhere after its call. With ``previous_response_id`` or
``conversation`` the earlier items live on the server: an output without its call is legal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import NOT_JSON, parse_json
from ctxwin._core.memo import Memo, PrefixCache
from ctxwin._core.model import (
    Block,
    Loc,
    Message,
    Opaque,
    OpaqueCategory,
    PairingRules,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from ctxwin._core.records import ProblemCode
from ctxwin._exceptions import FormatError
from ctxwin.formats._base import (
    Adapter,
    ParseState,
    json_type,
    render_content,
    require,
    role_of,
)
from ctxwin.formats._foreign import refuse_foreign
from ctxwin.formats._markers import OPENAI, openai_implicit
from ctxwin.formats._responses_items import (
    ANSWERS,
    BLANK_SCREENSHOT,
    CALL_TYPE,
    CALLS,
    NOT_IN_MESSAGE,
    OUTPUT_TYPE,
    OUTPUTS,
    OVERHEADS,
    PROGRAM_ONLY,
    PROGRAM_OUTPUTS,
    REPEAT_RESULTS,
    ROLES,
    SCREENSHOTS,
    SERVER_STATE_KEYS,
    TEXT_ARGUMENTS,
    TEXT_PARTS,
    arguments,
    body_score,
    has_id,
    has_reference,
    id_key,
    is_reference,
    item_id,
    n_content,
    opaque_role,
    program_caller,
    reasoning_context,
    role_problem,
    server_run,
    text_item,
    unrepeated,
    with_ties,
)
from ctxwin.formats._responses_items import ENCRYPTED_REASONING as ENCRYPTED_REASONING
from ctxwin.formats._responses_problems import problem_words
from ctxwin.formats._responses_shell import shell_chunk, shell_output, shell_text

__all__ = ["OpenAIResponsesAdapter"]

REFERENCE = "item_reference"


_PART_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
"""The outputs that may be a list of input parts, the only ones a breakpoint can sit in."""


class OpenAIResponsesAdapter(Adapter):
    name = "openai-responses"
    container = "input"
    wire_roles = frozenset(ROLES)
    rules: ClassVar[PairingRules] = PairingRules(
        turn="consecutive",
        placement="anywhere_after",
        carrier="one_per_message",
        carrier_role="tool",
        answers=ANSWERS,  # an output answers a call of its own type ("No tool output found")
        program_outputs=True,  # a program's function_call_output may leave out its call_id
        repeat_results=REPEAT_RESULTS,  # code mode's notify(): more outputs for one exec
    )
    # text.format: the output schema; text_format: the class responses.parse() takes for it
    envelope_keys = ("instructions", "tools", "text", "text_format")
    system_keys = ("instructions",)
    media_words = (*Adapter.media_words, "audio", "screenshot")
    overheads = OVERHEADS

    # ---------------------------------------------------------------- detection

    def detect(self, body: object) -> int:
        return body_score(body)

    # ---------------------------------------------------------------- parse

    def items_of(self, body: object) -> Sequence[object]:
        if isinstance(body, Mapping):
            items = body.get(self.container)
            require(
                isinstance(items, list),
                f"'input' must be a list of items or a string, not {json_type(items)}",
                path=self.container,
                format=self.name,
            )
            assert isinstance(items, list)
            return items
        return super().items_of(body)

    def parse(
        self,
        body: object,
        memo: Memo | None = None,
        prefix: PrefixCache[ParseState] | None = None,
    ) -> Conversation:
        text = body.get(self.container) if isinstance(body, Mapping) else body
        if not isinstance(text, str):
            return super().parse(body, memo, prefix)
        msg = Message(
            "user", (Text(text, raw=text, pristine=True),), raw=text, pristine=True, index=0
        )
        return self.conversation(body, (msg,))

    def envelope_marks(self, body: object) -> int:
        return openai_implicit(body)  # the instructions and tools carry none

    def marker_of(self, item: Mapping[str, Any]) -> bool:
        return OPENAI.in_list(item.get("content")) or OPENAI.in_list(item.get("output"))

    def marker_value(self, item: object) -> Mapping[str, Any] | None:
        found = OPENAI.values(item)
        return found[-1] if found else None

    def set_marker(self, item: dict[str, Any], on: bool | Mapping[str, Any]) -> dict[str, Any]:
        """A breakpoint on the item's last content part; an output takes one only where it
        may be a list of input parts (a function or custom tool's: a local shell's or
        apply_patch's output stays a string, a computer's a screenshot)."""
        kind = str(item.get("type", ""))
        key = "output" if kind.endswith("_output") else "content"
        if item.get("role") == "assistant" or (key == "output" and kind not in _PART_OUTPUTS):
            return item
        if key not in item and key == "output":
            return item
        value = item.get(key)
        if isinstance(value, str):
            value = [{"type": "input_text", "text": value}]
        if isinstance(value, list):
            item[key] = OPENAI.marked_list(value, on)
        return item

    def category(self, kind: str) -> OpaqueCategory:
        if kind == "reasoning":
            return "reasoning"
        if kind.endswith("_call") and kind != "image_generation_call":
            return "other"  # a server tool's item (``file_search_call``: text results)
        return super().category(kind)

    def listed(self, body: object) -> object:
        text = body.get(self.container) if isinstance(body, Mapping) else None
        if isinstance(body, Mapping) and isinstance(text, str):
            return {**body, self.container: [text_item("user", text)]}
        return body

    def reads_earlier_reasoning(self, body: object) -> bool | None:
        return reasoning_context(body)

    def server_state(self, body: object, refers: bool | None = None) -> bool:
        """``previous_response_id``, ``conversation`` or an ``item_reference``: items the
        request builds on live on the server, so a call may be absent."""
        if isinstance(body, Mapping):
            if any(body.get(k) is not None for k in SERVER_STATE_KEYS):
                return True
            body = body.get(self.container)
        if refers is not None:
            return refers
        return isinstance(body, list) and has_reference(body)

    def refers_to_server(self, msg: Message) -> bool:
        blocks = msg.blocks
        return len(blocks) == 1 and isinstance(blocks[0], Opaque) and blocks[0].kind == REFERENCE

    def parse_message(self, raw: Mapping[str, Any], index: int) -> Message:
        path = self.path(index)
        item_type = raw.get("type")
        if is_reference(raw):
            item_type = REFERENCE  # its ``type`` is optional
        elif item_type is None or item_type == "message":
            return self._message(raw, index, path)
        require(
            isinstance(item_type, str),
            f"an item's 'type' must be a string, not {json_type(item_type)}",
            path=f"{path}.type",
            format=self.name,
        )
        problem = role_problem(item_type, raw)
        require(problem is None, problem or "", path=f"{path}.role", format=self.name)
        block: Block
        if server_run(item_type, raw):  # the server wrote both items: the model's side
            role: Role = "assistant"
            block = with_ties(self.opaque(item_type, raw), item_type, raw)
        elif item_type in CALLS:
            role = "assistant"
            block = self._call(raw, item_type, path)
        elif item_type in OUTPUTS:
            role = "tool"
            block = self._result(raw, item_type, path)
        else:
            role = opaque_role(item_type)
            block = with_ties(self.opaque(item_type, raw), item_type, raw)
        # a server tool's item with an id (``ws_...``) comes with its reasoning, as a call
        # does (a program's output comes with its program)
        untied = item_type == "reasoning" or item_type in PROGRAM_OUTPUTS
        tied = role == "assistant" and not untied and has_id(raw)
        return Message(role, (block,), raw, True, index, False, tied, item_id(raw))

    def _message(self, raw: Mapping[str, Any], index: int, path: str) -> Message:
        require(
            "type" in raw or "role" in raw,
            "an input item needs a 'type' (or a 'role' and 'content' for a message)",
            path=path,
            format=self.name,
        )
        role = role_of(raw, ROLES, path=path, format=self.name)
        # an output message with an item id (``msg_...``) must come with its reasoning item
        tied = role == "assistant" and has_id(raw)
        content = raw.get("content")
        blocks: tuple[Part, ...]
        if isinstance(content, str):
            blocks = (Text(content, raw=content, pristine=True),)
        else:
            require(
                isinstance(content, list),
                f"'content' must be a string or a list of parts, not {json_type(content)}",
                path=f"{path}.content",
                format=self.name,
            )
            assert isinstance(content, list)
            blocks = self._parts(content, f"{path}.content", "unknown")
            refuse_foreign(blocks, f"{path}.content", self.name, NOT_IN_MESSAGE)
        return Message(role, blocks, raw, True, index, False, tied, item_id(raw))

    def _parts(self, parts: list[Any], path: str, fallback: str) -> tuple[Part, ...]:
        return self.parts(parts, path, text_types=TEXT_PARTS, fallback=fallback)

    def _call(self, raw: Mapping[str, Any], item_type: str, path: str) -> ToolCall:
        kind = CALLS[item_type][0]
        call_id = raw.get("call_id")
        require(
            isinstance(call_id, str),
            f"a {item_type} item needs a string 'call_id'",
            path=f"{path}.call_id",
            format=self.name,
        )
        name = raw.get("name") if kind in TEXT_ARGUMENTS else kind
        require(
            isinstance(name, str),
            f"a {item_type} item needs a string 'name'",
            path=f"{path}.name",
            format=self.name,
        )
        assert isinstance(call_id, str)
        assert isinstance(name, str)
        args_text = arguments(item_type, raw)[1]
        # A call with an item id (``fc_...``) must come with the reasoning item before it.
        tied, tie = has_id(raw), program_caller(raw)  # a program's call goes with it
        typed = kind not in TEXT_ARGUMENTS  # an action the API reads by its schema
        return ToolCall(
            call_id, name, args_text, kind, raw, True, tied_reasoning=tied, tie=tie, typed=typed
        )

    def _result(self, raw: Mapping[str, Any], item_type: str, path: str) -> ToolResult:
        kind = OUTPUTS[item_type]
        key = id_key(raw)
        call_id = raw.get(key)
        if not isinstance(call_id, str):
            reason = f"a {item_type} item needs a string '{key}'"
            if item_type in PROGRAM_OUTPUTS and call_id is None:  # (a program's: server_run)
                reason += PROGRAM_ONLY
            raise FormatError(reason, path=f"{path}.{key}", format=self.name)
        if kind == "tool_search":  # its ``tools`` are definitions, not content to edit
            tools = Opaque("tool_search_output", raw.get("tools"), category="fixed")
            return ToolResult(call_id, (tools,), kind=kind, raw=raw, pristine=True)
        output = raw.get("output")
        opath = f"{path}.output"
        content: tuple[Part, ...]
        if isinstance(output, str):
            content = (Text(output, raw=output, pristine=True),)
        elif isinstance(output, list):
            content = self._parts(output, opath, f"{kind}_output")  # shell: output chunks
            if kind == "shell":  # a chunk's stdout and stderr are its text
                content = tuple(
                    Text(t, raw=p.raw, pristine=True) if (t := shell_text(p.raw)) else p
                    for p in content
                )
        elif isinstance(output, Mapping) and kind not in TEXT_ARGUMENTS:
            content = (self.opaque(str(output.get("type", f"{kind}_output")), output),)
        elif output is None and kind not in TEXT_ARGUMENTS:
            content = ()  # apply_patch_call_output: the output text is optional
        else:
            raise FormatError(
                f"a {item_type}'s 'output' must be a string or a list of content parts, "
                f"not {json_type(output)}",
                path=opath,
                format=self.name,
            )
        return ToolResult(call_id, content, kind=kind, raw=raw, pristine=True)

    # ---------------------------------------------------------------- render

    def wrap(self, conv: Conversation, items: list[object]) -> object:
        source = conv.source
        text = source.get(self.container) if isinstance(source, Mapping) else source
        if not isinstance(text, str):
            return super().wrap(conv, items)
        # ``input`` was a plain string: it stays one while its one message is unedited
        value: object = (
            text
            if len(items) == 1 and items[0] is text
            else [text_item("user", it) if isinstance(it, str) else it for it in items]
        )
        return {**source, self.container: value} if isinstance(source, Mapping) else value

    def render_message(self, msg: Message, conv: Conversation) -> object:
        return unrepeated(self._item(msg), msg.item_id)  # repair may have taken its id

    def _item(self, msg: Message) -> object:
        raw = msg.raw if isinstance(msg.raw, Mapping) else None
        block = msg.blocks[0] if len(msg.blocks) == 1 else None
        if isinstance(block, ToolResult):
            return self._render_result(block, raw)
        if isinstance(block, ToolCall):
            return self._render_call(block, msg.index)
        is_item = raw is not None and (
            raw.get("type") not in (None, "message") or is_reference(raw)
        )
        if isinstance(block, Opaque) and is_item:
            return block.raw  # reasoning, server tools: nothing in them is edited
        # A message item: one holding calls or outputs besides (a step broke it) drops them.
        parts = [b for b in msg.blocks if isinstance(b, (Text, Opaque))]
        if raw is None or is_item:
            return text_item(msg.role, self._content(parts, None, msg.role))
        out = dict(raw)
        content = raw.get("content")
        if not all(p.pristine for p in parts) or len(parts) != n_content(content):
            out["content"] = self._content(parts, content, msg.role)
        return out

    def _content(self, parts: list[Part], original: object, role: Role) -> object:
        """Message content in the shape it had: a string stays a string when it can."""
        text_type = "output_text" if role == "assistant" else "input_text"
        return render_content(parts, original, text_type=text_type, missing="")

    def _render_result(self, res: ToolResult, raw: Mapping[str, Any] | None) -> object:
        if raw is None:
            return self._new_output(res)
        out = dict(raw)
        key = id_key(raw)
        if res.call_id is not None and raw.get(key) != res.call_id:
            out[key] = res.call_id
        if not res.pristine and res.kind != "tool_search":
            output = self._output(res, raw.get("output"))
            if output is not None or "output" in raw:
                out["output"] = output
        return out

    def _new_output(self, res: ToolResult) -> dict[str, object]:
        """An output item ctxwin made (a synthetic one for an interrupted call)."""
        kind = res.kind
        out: dict[str, object] = {"type": OUTPUT_TYPE.get(kind, f"{kind}_call_output")}
        out["id" if kind == "local_shell" else "call_id"] = res.call_id
        if kind == "tool_search":  # no tools found: the model sees nothing new
            out.update(execution="client", status="completed", tools=[])
            return out
        if kind == "apply_patch":  # its status is required
            out["status"] = "failed" if res.is_error else "completed"
        output = self._output(res, [] if kind == "shell" else None)
        out["output"] = "" if output is None else output
        return out

    def _output(self, res: ToolResult, original: object) -> object:
        """An output's ``output`` in the shape it had: string, list of parts, or object."""
        parts = res.content
        opaque = [p.raw for p in parts if isinstance(p, Opaque)]
        if res.kind in SCREENSHOTS.kinds or (isinstance(original, Mapping) and opaque):
            # a computer_call_output is a screenshot, with no room for text: one that was
            # cleared (or never came) is a blank one
            return opaque[0] if opaque else dict(BLANK_SCREENSHOT)
        if res.kind == "shell" and (isinstance(original, list) or opaque):
            chunks = shell_output(original, res.text) if isinstance(original, list) else None
            return chunks if chunks is not None else [shell_chunk(p, res.is_error) for p in parts]
        return render_content(parts, original, text_type="input_text")

    def _render_call(self, call: ToolCall, index: int | None) -> object:
        raw = call.raw if isinstance(call.raw, Mapping) else None
        if call.pristine and raw is not None:
            return raw
        base: Mapping[str, Any]
        if raw is not None and raw.get("type") in CALLS:
            fresh, item_type, base = False, str(raw["type"]), raw
        else:  # a call ctxwin made
            fresh, item_type = True, CALL_TYPE.get(call.kind, "function_call")
            base = {"type": item_type}
        out = dict(base)
        if call.id is not None and out.get("call_id") != call.id:
            out["call_id"] = call.id
        kind = CALLS[item_type][0]
        if kind in TEXT_ARGUMENTS and out.get("name") != call.name:
            out["name"] = call.name
        field, before = arguments(item_type, base)
        if fresh or call.arguments != before:
            out[field] = call.arguments if kind in TEXT_ARGUMENTS else self._json(call, index)
        return out

    def _json(self, call: ToolCall, index: int | None) -> object:
        value = parse_json(call.arguments)
        if value is NOT_JSON:
            raise FormatError(
                f"the arguments of a {call.kind} call must be JSON (call {call.id})",
                path=self.path(index),
                format=self.name,
            )
        return value

    # ---------------------------------------------------------------- reporting

    def block_path(self, msg: Message, block: int) -> str:
        raw = msg.raw
        if isinstance(raw, str):
            return self.container  # ``input`` was a plain string
        path = self.path(msg.index)
        if isinstance(raw, Mapping) and raw.get("type") in (None, "message"):
            content = raw.get("content")
            if isinstance(content, list) and 0 <= block < len(content):
                return f"{path}.content[{block}]"
            if isinstance(content, str):
                return f"{path}.content"
        return path

    def problem_text(
        self, code: ProblemCode, conv: Conversation, loc: Loc, call_id: str | None
    ) -> str:
        return problem_words(code, conv, loc, call_id)
