"""OpenAI Responses items: the tables of item types and the helpers the adapter reads them
with (kept apart from ``openai_responses.py`` so each stays a size a reader can hold)."""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Mapping
from typing import Any

from ctxwin._core.jsontext import compact_json
from ctxwin._core.model import Opaque, Role
from ctxwin.formats._openai_images import openai_part_tokens
from ctxwin.tokens._meter import ImageOnly, Overheads, Sealed

__all__ = [
    "ANSWERS",
    "BLANK_SCREENSHOT",
    "CALLS",
    "CALL_TYPE",
    "CLIENT_ITEMS",
    "ENCRYPTED_REASONING",
    "FOREIGN_PARTS",
    "ITEM_ROLES",
    "MARKER_KEYS",
    "MARKER_PARTS",
    "NOT_IN_MESSAGE",
    "OUTPUTS",
    "OUTPUT_TYPE",
    "OVERHEADS",
    "PLACEHOLDER_ID",
    "PROGRAM_ONLY",
    "PROGRAM_OUTPUTS",
    "REPEAT_RESULTS",
    "ROLELESS",
    "ROLES",
    "SCREENSHOTS",
    "SERVER_STATE_KEYS",
    "TEXT_ARGUMENTS",
    "TEXT_PARTS",
    "arguments",
    "body_score",
    "call_words",
    "has_id",
    "has_reference",
    "id_key",
    "is_reference",
    "n_content",
    "opaque_role",
    "output_words",
    "program_caller",
    "reasoning_context",
    "role_problem",
    "server_run",
    "text_item",
    "with_ties",
]

ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
NOT_IN_MESSAGE = (
    "OpenAI Responses does not have in a message (its calls and results are items of their "
    "own: 'function_call', 'function_call_output')"
)
"""Why another format's call or result in a message's content is refused (after "which")."""
CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    # wire type: (kind, the field holding the arguments; the first one present wins)
    "function_call": ("function", ("arguments",)),
    "custom_tool_call": ("custom", ("input",)),
    "local_shell_call": ("local_shell", ("action",)),
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "computer_call": ("computer", ("action", "actions")),
    "tool_search_call": ("tool_search", ("arguments",)),
}
OUTPUTS: dict[str, str] = {
    "function_call_output": "function",
    "custom_tool_call_output": "custom",
    "local_shell_call_output": "local_shell",
    "shell_call_output": "shell",
    "apply_patch_call_output": "apply_patch",
    "computer_call_output": "computer",
    "tool_search_output": "tool_search",
}
OUTPUT_TYPE = {kind: t for t, kind in OUTPUTS.items()}
CALL_TYPE = {kind: t for t, (kind, _) in CALLS.items()}
ANSWERS = frozenset({*((kind, kind) for kind in OUTPUTS.values()), ("function", "local_shell")})
"""Which outputs answer which calls, as (output kind, call kind): each output type its own
call type, whatever the ``call_id`` says (the API refuses a ``function_call`` answered by a
``custom_tool_call_output``: "No tool output found for function call ..."; the Agents SDK
pairs them so, ``_TOOL_CALL_TO_OUTPUT_TYPE``), and a ``function_call_output`` a
``local_shell_call`` too (Codex answers one so: "LocalShellCall is represented in upstream
streams by a FunctionCallOutput", ``codex-rs`` ``normalize.rs``)."""
REPEAT_RESULTS = frozenset({"custom"})
"""Calls answered by more than one output: a ``custom_tool_call`` (Codex's code mode sends
a ``custom_tool_call_output`` with the ``exec`` call's ``call_id`` for each ``notify()`` of
its script, then one for its result, adjacent or, two cells running at once, interleaved:
openai/codex#41820, lidge-jun/opencodex#3731; a cell resumed later notifies after other
items, gakonst/nanocodex#129). A second ``function_call_output`` the API refuses
("Duplicate function_call_output for call_id ...", NousResearch/hermes-agent#102629)."""
BLANK_SCREENSHOT: dict[str, str] = {
    "type": "computer_screenshot",
    "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42"
    "mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
}
"""The output of a computer call whose screenshot was cleared, or that never got one: the
API takes only a screenshot there (a 1x1 PNG)."""
SCREENSHOTS = ImageOnly(frozenset({"computer"}), BLANK_SCREENSHOT, "computer_screenshot")
"""A computer call's output is its screenshot and nothing else (``output`` is one
``computer_screenshot``, openai 3.57.0 ``response_input_item_param.ComputerCallOutput``):
a text there (the window's placeholder, a repaired call's note) never reaches the model,
the blank screenshot written in its place does, and the meter counts that. Counted the
same whether ctxwin is about to write it or reads it back, a cleared screenshot saves what
its screenshot cost less the blank one, and the blank one is never cleared again (its
placeholder would cost as much)."""
ENCRYPTED_REASONING = Sealed("encrypted_content", 764, 7)
"""A reasoning item's ``encrypted_content`` is worth one input token per 7 characters past the
first 764; its summary is not read. Fitted on the reasoning tokens 65 GPT-5 calls of Codex
CLI reported for their one reasoning item (R² 0.996; one token per four characters, with the
summary, counted 2.74 times as much). On a Codex session's own counts of its 26 requests,
ctxwin's count follows the provider's with R² 0.990 (0.978 before) when it counts the
reasoning of earlier turns, and with R² 0.99994 when it leaves it out, as OpenAI does ("any
reasoning items from earlier turns are ignored and removed"), and as the adapter now says
(``drops_earlier_reasoning``). ``benchmarks/reasoning_counts.py`` prints both
(``benchmarks/README.md``, stops 32 and 33)."""
OVERHEADS = Overheads(
    encrypted_reasoning=ENCRYPTED_REASONING,
    drops_earlier_reasoning=True,
    images=openai_part_tokens,
    image_only=SCREENSHOTS,
)
"""What the Responses adapter counts beyond text: 3 tokens an item (OpenAI documents no rule
for Responses items, unlike Chat's 3 and the role: this count follows Codex sessions' billed
input at R² 0.99994, slope 1.014), encrypted reasoning at its rate, earlier
turns' reasoning as dropped, an inline image by its size and an inline PDF by its pages
as OpenAI bills them (:func:`~ctxwin.formats._openai_images.openai_part_tokens`:
``input_image`` parts and screenshots, ``input_file`` parts), a computer call's output as
its screenshot alone (:data:`SCREENSHOTS`)."""
TEXT_ARGUMENTS = frozenset({"function", "custom"})
"""Kinds whose arguments are text on the wire. The others carry a JSON value the API checks
against its schema (a ``local_shell_call``'s ``action.command`` is an array of strings:
``LocalShellCallAction``, openai ``response_input_item_param.py``): their calls are
:attr:`~ctxwin._core.model.ToolCall.typed`."""
SERVER_OUTPUTS = frozenset({"program_output"})
"""Outputs the server writes (what a program it ran returned): the model's side."""
CLIENT_ITEMS = frozenset({"mcp_approval_response"})
"""Opaque items the client writes in answer to the model, in the model's turn (as a tool's
output is): on the side of tool results, never the user's own message, which starts a new
turn (and leaves the reasoning of the turn before behind: OpenAI drops it)."""
SETTINGS_ITEMS = frozenset({"additional_tools", "configuration_update"})
"""Opaque items that set up what follows (tools, reasoning effort): system side, like a
``developer`` message."""
SERVER_STATE_KEYS = ("previous_response_id", "conversation")
MARKER_KEYS = ("instructions", *SERVER_STATE_KEYS)
MARKER_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
FOREIGN_PARTS = frozenset(
    {"image_url", "file", "image", "document", "tool_use", "tool_result", "thinking"}
)
"""Part types of OpenAI Chat and Anthropic messages, which Responses does not have."""


def opaque_role(item_type: str) -> Role:
    """Role of an item ctxwin carries untouched.

    The client writes approval answers and the outputs of tools ctxwin does not know
    (``*_output``) within the model's turn: the side of tool results (``tool``; as the
    user's own message, an approval ended the turn, and the meter counted the reasoning
    before it as dropped); tools it adds and configuration updates: system side.
    Everything else is the model's or the server's: reasoning, server-run tool calls and
    what a program the server ran returned (``program_output``),
    ``compaction``, unknown items, and ``item_reference`` (it can point at any earlier
    item, most often one of the model's).
    """
    if item_type in SETTINGS_ITEMS:
        return "system"
    if item_type in SERVER_OUTPUTS:
        return "assistant"
    return "tool" if item_type in CLIENT_ITEMS or item_type.endswith("_output") else "assistant"


ITEM_ROLES: dict[str, tuple[str, ...]] = {
    "additional_tools": (
        *("developer", "unknown", "user", "assistant"),
        *("system", "critic", "discriminator", "tool"),
    ),
}
"""The roles an item other than a message may carry: an ``additional_tools`` item's (the
input type takes ``developer``; one echoed back from a response carries any role of the
output type, openai 3.57.0 ``response_output_item.AdditionalTools``)."""
ROLELESS = frozenset(
    {
        *CALLS,
        *OUTPUTS,
        *("reasoning", "compaction", "compaction_trigger", "configuration_update"),
        *("file_search_call", "web_search_call", "image_generation_call"),
        *("code_interpreter_call", "mcp_list_tools", "mcp_approval_request"),
        *("mcp_approval_response", "mcp_call", "item_reference", "program", "program_output"),
    }
)
"""The item types with no ``role`` in the API's input or output types (openai 3.57.0
``ResponseInputItemParam``, ``ResponseOutputItem``, ``ResponseItem``): the API refuses one
there as an unknown parameter, a null one too (openai/openai-agents-python#1883 met
``Unknown parameter: 'input[1].status'`` for a ``status: null``)."""


def role_problem(item_type: str, raw: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``role`` of an item of ``item_type`` (not a message): one on a
    type that has none, or a role its type does not take. A type ctxwin does not know is
    the API's to judge."""
    if "role" not in raw:
        return None
    role = raw["role"]
    shown = reprlib.repr(role) if isinstance(role, str) else compact_json(role)[:40]
    if item_type in ROLELESS:
        return f"an item of type {item_type!r} takes no 'role' (got {shown}): a message does"
    allowed = ITEM_ROLES.get(item_type)
    if allowed is None or (isinstance(role, str) and role in allowed):
        return None
    expected = ", ".join(allowed)
    return f"unknown role {shown} for an item of type {item_type!r} (expected one of {expected})"


TOOL_SEARCH = frozenset({"tool_search_call", "tool_search_output"})
"""Tool search items: a pair the client answers by ``call_id`` when it runs the search
(``execution: "client"``); the server's own search is opaque, as other server tools are."""


PROGRAM_OUTPUTS = frozenset({"function_call_output"})
"""Outputs the API lets leave out their ``call_id`` (openai 3.57.0 types it optional): the
output of a call a program made, which names its program in ``caller`` instead."""


PROGRAM_ONLY = (
    " naming the call it answers: only the output of a call a program made"
    ' ("caller": {"type": "program", "caller_id": ...}) may leave it out'
)
"""Why a ``function_call_output`` without a ``call_id`` is refused: nothing says which call
it answers (the API types it optional for a program's outputs, which go with their
program)."""
CALL_WORDS = {"function": "function call", "custom": "custom tool call"}
"""How the API names a call of these kinds in its errors ("No tool output found for custom
tool call call_...", as Codex users met it: Soju06/codex-lb#1168); a call of another kind
is named by its item type."""


def call_words(kind: str) -> str:
    """A call of ``kind`` as the API's errors name it (:data:`CALL_WORDS`), else its type."""
    return CALL_WORDS.get(kind) or CALL_TYPE.get(kind, "function call")


def output_words(kind: str) -> str:
    """An output of ``kind`` as the API's errors name it, else its type."""
    words = CALL_WORDS.get(kind)
    return f"{words} output" if words else OUTPUT_TYPE.get(kind, "function call output")


def server_run(item_type: str, raw: Mapping[str, Any]) -> bool:
    """Whether a call or output item is the server's, carried opaque: a tool search item
    with no ``call_id`` to pair it by, or with ``execution: "server"``; an output without a
    ``call_id`` that a program made (``caller: {"type": "program", ...}``), which goes with
    its program, not with a call. Every other call and output is the client's."""
    if item_type in PROGRAM_OUTPUTS:
        return raw.get("call_id") is None and program_caller(raw) is not None
    if item_type not in TOOL_SEARCH:
        return False
    return not isinstance(raw.get("call_id"), str) or raw.get("execution") == "server"


def program_caller(raw: Mapping[str, Any]) -> str | None:
    """The ``call_id`` of the program that made this item (programmatic tool calling:
    ``caller: {"type": "program", "caller_id": ...}``), if one did."""
    caller = raw.get("caller")
    if not isinstance(caller, Mapping) or caller.get("type") != "program":
        return None
    caller_id = caller.get("caller_id")
    return caller_id if isinstance(caller_id, str) else None


PLACEHOLDER_ID = "__fake_id__"
"""The id the OpenAI Agents SDK stamps on the items of a model that gives none (its
``FAKE_RESPONSES_ID``: ``LitellmModel``, Chat Completions models), and ignores itself: no
item id, so nothing ties such a call or message to the reasoning before it."""


def has_id(raw: Mapping[str, Any]) -> bool:
    """Whether an item carries an item id of the API's (``rs_...``, ``fc_...``, ``msg_...``)."""
    found = raw.get("id")
    return bool(found) and found != PLACEHOLDER_ID


def item_id(raw: Mapping[str, Any]) -> str | None:
    """The item id the API wants unique in the input ("Duplicate item found with id ..."):
    an item's own, not an ``item_reference``'s (which names an item on the server), nor a
    ``local_shell_call_output``'s ``id`` (its call's: :func:`id_key`)."""
    found = raw.get("id")
    if not isinstance(found, str) or not has_id(raw) or is_reference(raw):
        return None
    return None if id_key(raw) == "id" else found


def unrepeated(item: object, kept: str | None) -> object:
    """A rendered ``item`` without its id where repair took it (``kept``, the message's
    :attr:`~ctxwin._core.model.Message.item_id`, is None while the item has one: an id an
    earlier item has, on an item that is not that one)."""
    if kept is None and isinstance(item, Mapping) and item_id(item) is not None:
        return {k: v for k, v in item.items() if k != "id"}
    return item


def with_ties(block: Opaque, item_type: str, raw: Mapping[str, Any]) -> Opaque:
    """An item ctxwin carries untouched, with what ties it to other items: to a program the
    server runs, a ``program`` opens its ``call_id``, its ``program_output`` answers it, and
    an item the program made (a server tool's call) names it in its ``caller``; a
    ``reasoning`` item with an id needs an item of its turn after it
    (:attr:`~ctxwin._core.model.Opaque.needs_next`: "Item 'rs_...' of type 'reasoning' was
    provided without its required following item", continuedev/continue#8933)."""
    if item_type == "reasoning":
        return dataclasses.replace(block, needs_next=True) if has_id(raw) else block
    call_id = raw.get("call_id") if isinstance(raw.get("call_id"), str) else None
    opens = call_id if item_type == "program" else None
    tie = call_id if item_type in SERVER_OUTPUTS else program_caller(raw)
    if opens is None and tie is None:
        return block
    closes = item_type in SERVER_OUTPUTS  # a program_output ends its program
    return dataclasses.replace(block, opens=opens, tie=tie, closes=closes)


def is_reference(item: object) -> bool:
    """An ``item_reference``, whose ``type`` may be left out (``{"id": "msg_..."}``)."""
    if not isinstance(item, Mapping):
        return False
    kind: object = item.get("type")
    if kind is None:
        return "role" not in item and "content" not in item and isinstance(item.get("id"), str)
    return kind == "item_reference"


def has_reference(items: list[object]) -> bool:
    """Whether ``items`` hold an ``item_reference`` (:func:`is_reference`), an SDK object one
    too. Every request scans its whole input for one, so a plain dict is read inline: the
    call per item cost a third of a steady-state apply at 1,000 items."""
    for item in items:
        if type(item) is dict:
            kind = item.get("type")
            if kind is None:
                if "role" not in item and "content" not in item and isinstance(item.get("id"), str):
                    return True
            elif kind == "item_reference":
                return True
        elif is_reference(item) or _sdk_reference(item):
            return True
    return False


def _sdk_reference(item: object) -> bool:
    """An SDK object that is an ``item_reference``: typed so, or, as the openai SDK builds
    ``ItemReference(id=...)``, with no type, a string id and no role or content."""
    kind = getattr(item, "type", None)
    if kind is not None:
        return bool(kind == "item_reference")
    no_message = getattr(item, "role", None) is None and getattr(item, "content", None) is None
    return no_message and isinstance(getattr(item, "id", None), str)


def id_key(raw: Mapping[str, Any]) -> str:
    """Where an output carries its call's id (``local_shell_call_output`` uses ``id``)."""
    if raw.get("type") == "local_shell_call_output" and "call_id" not in raw:
        return "id"
    return "call_id"


def arguments(item_type: str, raw: Mapping[str, Any]) -> tuple[str, str]:
    """The field of a call item holding its arguments, and the arguments as text."""
    kind, fields = CALLS[item_type]
    field = next((f for f in fields if f in raw), fields[0])
    value = raw.get(field)
    if isinstance(value, str) and kind in TEXT_ARGUMENTS:
        return field, value
    return field, "" if value is None else compact_json(value)


def n_content(content: object) -> int:
    """How many blocks parsing makes of a message's ``content``."""
    if isinstance(content, list):
        return len(content)
    return 1 if isinstance(content, str) else 0


def body_score(body: object) -> int:
    """How surely ``body`` (a request dict or a bare list of items) is a Responses request
    (see :meth:`ctxwin.formats._base.Adapter.detect`)."""
    if isinstance(body, Mapping):
        if "messages" in body or "contents" in body or "input" not in body:
            return 0
        items = body["input"]
        sure = any(body.get(k) is not None for k in MARKER_KEYS)
        if not isinstance(items, list):
            # a string is the short form; anything else is a malformed Responses body,
            # better reported by this adapter than as "cannot tell the format"
            return 2 if sure else 1
        strict = False
    elif isinstance(body, list) and body:
        items, sure, strict = body, False, True
    else:
        return 0
    for item in items:
        score = item_score(item, strict)
        if score == 0:
            return 0
        sure = sure or score == 2
    return 2 if sure else 1


def item_score(item: object, strict: bool) -> int:
    """Detection score of one item; ``strict`` for a bare list (nothing else says Responses)."""
    if not isinstance(item, Mapping):
        return 0 if strict else 1
    role = item.get("role")
    if role in ("tool", "function") or any(k in item for k in ("tool_calls", "tool_call_id")):
        return 0  # OpenAI Chat
    item_type = item.get("type")
    if item_type is not None:
        return 2 if isinstance(item_type, str) else int(not strict)
    if not isinstance(role, str) or role not in ROLES or "content" not in item:
        return int(not strict)
    content = item["content"]
    if not isinstance(content, list):
        return 1 if isinstance(content, str) or not strict else 0
    score = 1
    for part in content:
        part_type = part.get("type") if isinstance(part, Mapping) else None
        if not isinstance(part_type, str):
            if strict:
                return 0
        elif part_type in MARKER_PARTS:
            score = 2
        elif strict and part_type in FOREIGN_PARTS:
            return 0
    return score


def text_item(role: Role, content: object) -> dict[str, object]:
    """A message item ctxwin writes."""
    return {"type": "message", "role": role, "content": content}


def reasoning_context(body: object) -> bool | None:
    """Whether a request's ``reasoning.context`` says earlier turns' reasoning is read
    (``all_turns``) or dropped (``current_turn``); None when it is left to the model
    (``auto``, or not given: ``gpt-5.6`` reads them all, earlier models only the current
    turn's; openai 3.57.0, ``types/shared/reasoning.py``)."""
    reasoning = body.get("reasoning") if isinstance(body, Mapping) else None
    context = reasoning.get("context") if isinstance(reasoning, Mapping) else None
    return (
        {"all_turns": True, "current_turn": False}.get(context)
        if isinstance(context, str)
        else None
    )
