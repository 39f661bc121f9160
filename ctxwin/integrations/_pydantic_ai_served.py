"""What a pydantic-ai request costs besides the content of its messages, as the model
serving it is sent it, in the Anthropic-shaped body ctxwin edits (see
:mod:`ctxwin.integrations._pydantic_ai_map`).

ctxwin counts a body's tools as their JSON text and its system prompt as its text, the same
in every format; what differs is the JSON pydantic-ai writes for each model, where it puts
the system prompt and the instructions, and how many wire messages a pydantic-ai message
becomes. So the body holds them as the model's own request does:

- ``AnthropicModel``: the tools as it writes them, and ``system`` the system prompts joined,
  or, with instructions, a text block for the system prompts and one per instruction part;
- ``OpenAIChatModel``: the tools as OpenAI Chat function tools (``{"type": "function",
  "function": {...}}``), each system prompt and instruction part a system message of its
  own; a request's tool returns are a tool message each (a file they hold comes in a user
  message after them);
- ``OpenAIResponsesModel``: the tools as Responses function tools, the instructions one
  string (``instructions``), each system prompt a system item; each call, output, text and
  reasoning item an item of its own;
- any other model, or none known (a history processor): the tools in Anthropic's shape, the
  instructions and system prompts one string, as before; for ``GoogleModel``, its inline
  images and PDFs as Gemini bills them (:data:`GEMINI_ADAPTER`), for others as Claude does.

The tools are the definitions as the model customizes them before sending
(``Model.customize_request_parameters``: OpenAI's strict schemas, ``strict``), written as
its ``_map_tool_definition`` writes them. A pydantic-ai message that an OpenAI model is sent
as several wire messages stays one Anthropic message (ctxwin maps its edits back to it),
holding one more block: a stand-in worth the overhead of the other wire messages (3 tokens
each, as ctxwin's OpenAI adapters count them), and of the ``{"error": ...}`` an error result
is wrapped in (:data:`ERROR_WRAPPER`). The body of such a request is read by
:data:`ADAPTER`, the Anthropic adapter counting a stand-in's :data:`TOKENS` string at one
token per character past the first, whatever the counter. The values are memoized: the
same tools and texts give the very same objects, so ctxwin's own memos hit.

A ``NativeOutput``'s schema counts as ``output_config`` (the structured-output format each
model sends: ``response_format``, ``output_config``, ``responseSchema``). Not counted:
pydantic-ai's deferred tools and native tools.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ctxwin._core.model import OpaqueCategory
from ctxwin.formats import _gemini_media as gemini
from ctxwin.formats import get_adapter
from ctxwin.formats._anthropic_media import media_part_tokens
from ctxwin.formats._openai_images import OPENAI_PDF_PAGE_TOKENS
from ctxwin.formats.anthropic import AnthropicAdapter
from ctxwin.integrations._pydantic_ai_parts import TOKENS, Reader, Served
from ctxwin.tokens._images import OPENAI_IMAGES
from ctxwin.tokens._meter import Sealed

__all__ = [
    "ADAPTER",
    "ERROR_WRAPPER",
    "GEMINI_ADAPTER",
    "OVERHEAD",
    "Envelope",
    "Parts",
    "with_overhead",
]

Block = dict[str, Any]

OVERHEAD = "wire_messages"
"""The type of the stand-in block worth the overhead of the wire messages a pydantic-ai
message is sent as beyond the first."""


ERROR_WRAPPER = 4
"""The tokens of the ``{"error": ...}`` pydantic-ai wraps an error result in for a model with
no error flag (OpenAI's): ``{"error":"`` and ``"}`` (o200k_base, cl100k_base; the escapes of
quotes inside are not counted). ctxwin reads and edits the result's own text."""


class _OpenAIServed(AnthropicAdapter):
    """The Anthropic adapter for a pydantic-ai request an OpenAI model serves: a stand-in
    block (its reasoning items, the overhead of its extra wire messages) is worth exactly
    its :data:`TOKENS` string's length past the first character, and an inline image or PDF
    what OpenAI bills for it (its tiles, its pages as the Chat adapter counts them), not
    Claude."""

    variant: ClassVar[str] = "pydantic-ai-openai"
    overheads = dataclasses.replace(
        AnthropicAdapter.overheads,
        encrypted_reasoning=Sealed(TOKENS, 1, 1),
        images=functools.partial(
            media_part_tokens, rule=OPENAI_IMAGES, page_tokens=OPENAI_PDF_PAGE_TOKENS
        ),
    )

    def category(self, kind: str) -> OpaqueCategory:
        return "reasoning" if kind in ("reasoning", OVERHEAD) else super().category(kind)


ADAPTER = _OpenAIServed()
"""The adapter of the body of a request an OpenAI model serves."""


def _gemini_media(raw: object) -> int | None:
    """An image or inline PDF block as Gemini bills what ``GoogleModel`` sends in its place
    (``inlineData``, or ``fileData`` for a URL it does not download): an image
    :data:`~ctxwin.formats._gemini_media.IMAGE_TOKENS` whatever its size, a PDF its pages
    at :data:`~ctxwin.formats._gemini_media.PDF_PAGE_TOKENS`; None for anything else."""
    if isinstance(raw, Mapping) and raw.get("type") == "image":
        return gemini.IMAGE_TOKENS
    return media_part_tokens(raw, page_tokens=gemini.PDF_PAGE_TOKENS)


class _GeminiServed(AnthropicAdapter):
    """The Anthropic adapter for a pydantic-ai request a Google model serves: its media as
    Gemini bills them (the rest as for any model but Anthropic's and OpenAI's)."""

    variant: ClassVar[str] = "pydantic-ai-gemini"
    overheads = dataclasses.replace(AnthropicAdapter.overheads, images=_gemini_media)


GEMINI_ADAPTER = _GeminiServed()
"""The adapter of the body of a request a Google model (``GoogleModel``) serves."""


def with_overhead(
    message: Block, parts: tuple[int | None, ...], served: Served | None
) -> tuple[Block, tuple[int | None, ...]]:
    """``message`` (and the part of each of its blocks) with the stand-in worth what the
    wire messages ``served`` sends it as cost beyond the one message it counts as (their
    overheads, OpenAI Chat's role token included); as it is where that is nothing."""
    if served not in ("openai-chat", "openai-responses"):
        return message, parts
    blocks = message["content"]
    errors = 0
    if message["role"] == "assistant":
        n = 1 if served == "openai-chat" else len(blocks)
    else:
        results = [b for b in blocks if b.get("type") == "tool_result"]
        others = {j for b, j in zip(blocks, parts, strict=True) if b.get("type") != "tool_result"}
        files = served == "openai-chat" and any(_files(b) for b in results)
        n = len(results) + len(others) + files
        errors = sum(1 for b in results if b.get("is_error"))
    own = ADAPTER.overheads.message  # what the message counts with already
    extra = n * get_adapter(served).overheads.message - own + ERROR_WRAPPER * errors
    if extra <= 0:
        return message, parts
    stand_in = {"type": OVERHEAD, TOKENS: "e" * (extra + 1)}
    return {**message, "content": [*blocks, stand_in]}, (*parts, None)


def _files(result: Block) -> bool:
    """Whether a tool result holds files (OpenAI Chat sends them in a user message)."""
    content = result.get("content")
    return isinstance(content, list) and any(b.get("type") != "text" for b in content)


@dataclass(frozen=True, slots=True)
class Parts:
    """The envelope of one request: the body's keys besides ``messages`` (``system``,
    ``tools``), and the system messages that come first in ``messages``."""

    keys: dict[str, Any]
    lead: tuple[Block, ...]


class Envelope:
    """Builds :class:`Parts`, the same objects for the same tools and texts."""

    def __init__(self) -> None:
        self._tools: tuple[Any, list[Any], list[Block]] | None = None
        self._texts: tuple[Any, Parts] | None = None
        self._prompt: tuple[Any, Any, str | None] | None = None
        self._native: tuple[Any, Any, Block] | None = None

    def parts(self, params: Any, prompts: list[str], reader: Reader) -> Parts:
        """The envelope of a request with the tools and instructions of ``params`` (a
        ``ModelRequestParameters``, or None) and the system prompts ``prompts``, for the
        model of ``reader`` (:attr:`Reader.served`)."""
        served, model = reader.served, reader.model
        instructions = _instructions(params, self.prompted(params, model))
        key = (served, tuple(instructions), tuple(prompts))
        hit = self._texts
        if hit is None or hit[0] != key:
            hit = self._texts = (key, _texts(served, instructions, prompts))
        tools = self.tools(params, served, model)
        native = self.native(params, model)
        if not tools and native is None:
            return hit[1]
        more: dict[str, Any] = {"tools": tools} if tools else {}
        if native is not None:
            more["output_config"] = native
        return Parts({**hit[1].keys, **more}, hit[1].lead)

    def native(self, params: Any, model: Any) -> Block | None:
        """The schema of a ``NativeOutput``, which the model sends as its structured-output
        format (``response_format``, ``output_config``, ``responseSchema``) and the provider
        puts in the prompt: as the model customizes it, in Anthropic's ``output_config``
        (the same object for the same output)."""
        output = getattr(params, "output_object", None)
        if getattr(params, "output_mode", None) != "native" or output is None:
            return None
        hit = self._native
        if hit is None or hit[1] is not model or not (hit[0] is output or hit[0] == output):
            hit = self._native = (output, model, _native_format(output, model))
        return hit[2]

    def prompted(self, params: Any, model: Any) -> str | None:
        """The schema prompt pydantic-ai adds to the instructions for a ``PromptedOutput``
        when the model prepares the request (``Model.prepare_request``, after the hooks
        ran): built as it builds it, once for the same output and template."""
        output = getattr(params, "output_object", None)
        if getattr(params, "output_mode", None) != "prompted" or not output:
            return None
        template = params.prompted_output_template or _profile_template(model)
        hit = self._prompt
        if hit is None or hit[1] != template or not (hit[0] is output or hit[0] == output):
            hit = self._prompt = (output, template, _prompt_of(output, template))
        return hit[2]

    def tools(self, params: Any, served: Served | None, model: Any) -> list[Block]:
        """The tool definitions of ``params`` as ``model`` sends them (memoized: the same
        definitions, copies included, give the very same list)."""
        if params is None:
            return []
        defs = [*(getattr(params, "function_tools", None) or ())]
        defs += [*(getattr(params, "output_tools", None) or ())]
        hit = self._tools
        if hit is not None and hit[0] == (served, id(model)) and hit[1] == defs:
            return hit[2]
        out = _written(_customized(defs, model), served, model)
        self._tools = ((served, id(model)), defs, out)
        return out


def _instructions(params: Any, prompted: str | None) -> list[str]:
    parts = getattr(params, "instruction_parts", None) or ()
    out = [str(p.content) for p in parts if getattr(p, "content", None)]
    return [*out, prompted] if prompted and prompted not in out else out


def _profile_template(model: Any) -> Any:
    get = getattr(getattr(model, "profile", None), "get", None)
    return get("prompted_output_template", None) if callable(get) else None


def _prompt_of(output: Any, template: Any) -> str | None:
    """pydantic-ai's prompt for ``output`` (None where its builder cannot be reached: its
    internals moved, and the prompt is not counted then)."""
    try:
        from pydantic_ai._output import StructuredTextOutputSchema
        from pydantic_ai.profiles import DEFAULT_PROMPTED_OUTPUT_TEMPLATE

        text = StructuredTextOutputSchema.build_instructions(
            template or DEFAULT_PROMPTED_OUTPUT_TEMPLATE, output
        )
    except Exception:
        return None
    return str(text)


def _texts(served: Served | None, instructions: list[str], prompts: list[str]) -> Parts:
    """Where the served model's request has the system prompts and the instructions."""
    joined = "\n\n".join(prompts)
    if served == "anthropic":  # AnthropicModel._build_system_prompt
        if not instructions:
            return Parts({"system": joined} if joined else {}, ())
        texts = [joined, *instructions] if joined else instructions
        return Parts({"system": [{"type": "text", "text": t} for t in texts]}, ())
    if served == "openai-chat":  # a system message each
        return Parts({}, tuple(_system(t, served) for t in [*prompts, *instructions]))
    if served == "openai-responses":  # ``instructions``; a system item per system prompt
        keys = {"system": "\n\n".join(instructions)} if instructions else {}
        return Parts(keys, tuple({"role": "system", "content": t} for t in prompts))
    texts = [*instructions, *prompts]
    return Parts({"system": "\n\n".join(texts)} if texts else {}, ())


def _system(text: str, served: Served) -> Block:
    """A system message of the served model's request, with the stand-in worth what its
    overhead there is beyond the one it counts with (OpenAI Chat's role token)."""
    extra = get_adapter(served).overheads.message - ADAPTER.overheads.message
    if extra <= 0:
        return {"role": "system", "content": text}
    stand_in = {"type": OVERHEAD, TOKENS: "e" * (extra + 1)}
    return {"role": "system", "content": [{"type": "text", "text": text}, stand_in]}


def _customized(defs: list[Any], model: Any) -> list[Any]:
    """The definitions as ``model`` customizes them before sending (its JSON schema
    transformer: OpenAI's strict schemas); as given when it cannot say."""
    customize = getattr(model, "customize_request_parameters", None)
    if not defs or not callable(customize):
        return defs
    try:
        from pydantic_ai.models import ModelRequestParameters

        done = customize(ModelRequestParameters(function_tools=defs))
        return list(done.function_tools)
    except Exception:  # another pydantic-ai, or a schema the model refuses: as given
        return defs


def _native_format(output: Any, model: Any) -> Block:
    """``output_config`` holding ``output``'s JSON schema as ``model`` customizes it."""
    customize = getattr(model, "customize_request_parameters", None)
    if callable(customize):
        try:
            from pydantic_ai.models import ModelRequestParameters

            done = customize(ModelRequestParameters(output_mode="native", output_object=output))
            output = done.output_object or output
        except Exception:  # another pydantic-ai, or a schema the model refuses: as given
            pass
    named = {k: v for k in ("name", "description") if (v := getattr(output, k, None))}
    return {"format": {"type": "json_schema", **named, "schema": output.json_schema}}


def _written(defs: list[Any], served: Served | None, model: Any) -> list[Block]:
    """The definitions as the served model's ``_map_tool_definition`` writes them."""
    profile: Any = getattr(model, "profile", None)
    if not hasattr(profile, "get"):
        profile = {}
    get = profile.get
    out: list[Block] = []
    for d in defs:
        schema = d.parameters_json_schema
        if served == "openai-chat":
            function: Block = {
                "name": d.name,
                "description": d.description or "",
                "parameters": schema,
            }
            if d.strict and get("openai_supports_strict_tool_definition", True):
                function["strict"] = d.strict
            out.append({"type": "function", "function": function})
        elif served == "openai-responses":
            strict = bool(d.strict and get("openai_supports_strict_tool_definition", True))
            out.append(
                {
                    "name": d.name,
                    "parameters": schema,
                    "type": "function",
                    "description": d.description,
                    "strict": strict,
                }
            )
        else:
            tool: Block = {"name": d.name, "description": d.description or ""}
            tool["input_schema"] = schema
            if served == "anthropic" and d.strict and get("supports_json_schema_output", False):
                tool["strict"] = d.strict
            out.append(tool)
    return out
