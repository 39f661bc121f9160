"""Recognizing ctxwin's own output, so that applying a policy to its output edits nothing.

``apply(apply(x).body)`` must report no new edits. The select step sees, on the second
pass, texts that ctxwin wrote itself: a selection (compact JSON the expression may no
longer match: ``hits[].path`` selects nothing from the list it produced), a window
placeholder, a capped text with its notice. These are told from the text alone (a memo of
earlier outputs would make the report depend on what was applied before):

- :func:`is_selection`: compact JSON as ctxwin writes it, whose shape is one the
  expression can produce (a multi-select's keys in order, a projection's list...);
- :func:`is_string_selection`: a text (not JSON) the expression can have written as a
  string (any text for ``max(hits[].path)``, one of six words for ``type(@)``...);
- :func:`is_marked`: a placeholder or a notice rendered from the policy's templates for
  this tool and call.
"""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ctxwin._core.jsontext import compact_json
from ctxwin._policy.schema import DEFAULT_NOTICE
from ctxwin.steps._base import Context, ResultInfo
from ctxwin.steps._jsoncut import MAX_DIVE, with_note

__all__ = [
    "as_sent",
    "cap_notices",
    "is_marked",
    "is_selection",
    "is_string_selection",
    "json_marked",
    "line_marked",
    "noted",
    "quoted_notice",
    "without_note",
]

_NUMBER = frozenset({"abs", "avg", "ceil", "floor", "length", "sum", "to_number"})
_BOOL = frozenset({"contains", "ends_with", "starts_with"})
_LIST = frozenset({"keys", "sort", "sort_by", "to_array", "values", "map"})
_NUMBER_FIELDS = frozenset({"tokens", "omitted_tokens", "total_tokens", "kept_tokens"})


def _all(results: Iterable[bool | None]) -> bool | None:
    """False if any is False, True if all are True, else None."""
    out: bool | None = True
    for r in results:
        if r is False:
            return False
        if r is None:
            out = None
    return out


def _shape(node: Mapping[str, Any], value: object) -> bool | None:
    """Whether ``value`` has the shape of what the parsed expression ``node`` evaluates to:
    True (it has: a multi-select's keys in order...), False (it cannot be its value), None
    (the expression says little about its value: a field can be anything)."""
    kind = node.get("type")
    kids: list[Mapping[str, Any]] = list(node.get("children", ()))
    if kind == "multi_select_dict":
        pairs = [(k.get("value"), k["children"][0]) for k in kids]
        if not isinstance(value, dict) or list(value) != [key for key, _ in pairs]:
            return False
        return _all(value[k] is None or _shape(e, value[k]) is not False for k, e in pairs)
    if kind == "multi_select_list":
        if not isinstance(value, list) or len(value) != len(kids):
            return False
        return _all(
            v is None or _shape(k, v) is not False for k, v in zip(kids, value, strict=True)
        )
    if kind in ("projection", "value_projection", "filter_projection"):
        if not isinstance(value, list):
            return False
        return _all([_shape(kids[1], v) for v in value]) if value else None
    if kind == "flatten":
        return None if isinstance(value, list) else False
    if kind in ("pipe", "subexpression"):
        return _shape(kids[-1], value)
    if kind == "literal":
        return bool(value == node.get("value"))
    if kind in ("comparator", "not_expression"):
        return isinstance(value, bool)
    if kind == "function_expression":
        name = node.get("value")
        if name in _NUMBER:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if name in _BOOL:
            return isinstance(value, bool)
        if name in _LIST:
            return None if isinstance(value, list) else False
        if name == "reverse":  # of a list or of a string
            return None if isinstance(value, list | str) else False
        if name == "merge":
            return None if isinstance(value, dict) else False
    return None  # a field, an index, the current node...: any value


def is_selection(parsed: Mapping[str, Any], text: str, data: object, *, strict: bool) -> bool:
    """Whether ``text`` (parsed: ``data``) reads as a selection the expression wrote:
    compact JSON of its shape (``strict``: a shape the expression pins down, such as a
    multi-select's keys; else any shape it does not rule out)."""
    if compact_json(data) != text:
        return False
    shape = _shape(parsed, data)
    return shape is True if strict else shape is not False


_ANY_TEXT = "(?s:.*)"
"""What any text matches: the strings an expression that may select any string writes."""

_ANY_STRING = frozenset({"field", "subexpression", "index_expression", "current", "identity"})
"""Expressions that may select any value, a string of any text included."""

_ANY_STRING_FUNCTIONS = frozenset({"max", "max_by", "min", "min_by", "reverse", "to_string"})
"""Builtins that may return any string of the data (``max(hits[].path)``, ``max_by`` an
item, ``reverse`` of a string, ``to_string`` a string itself or JSON text)."""

_TYPE_WORDS = "(?:array|boolean|null|number|object|string)"
"""What ``type`` returns. The other builtins return no string (numbers, booleans, lists,
objects) but ``join`` and ``not_null``, read below."""


def _strings(node: Mapping[str, Any]) -> str | None:
    """A regex for the strings the parsed expression ``node`` may evaluate to, as the step
    writes them (a string as itself); None when it evaluates to no string. Any text for
    one that may select any string of the data, a ``type`` one of its six words, a
    ``join`` of literals and values its literal pieces in order, a string literal itself."""
    kind = node.get("type")
    kids: list[Mapping[str, Any]] = list(node.get("children") or ())
    function = node.get("value") if kind == "function_expression" else None
    if kind in ("pipe", "subexpression", "and_expression"):  # ``a && b`` is ``b`` if a string
        return _strings(kids[-1]) if kids else None
    if kind == "or_expression" or function == "not_null":  # any of them
        return _either(_strings(k) for k in kids)
    if kind == "literal":
        value = node.get("value")
        return re.escape(value) if isinstance(value, str) else None
    if function == "join":
        return _joined(kids)
    if function == "type":
        return _TYPE_WORDS
    if kind in _ANY_STRING or function in _ANY_STRING_FUNCTIONS:
        return _ANY_TEXT
    return None  # a number, a boolean, a list, an object


def _either(patterns: Iterable[str | None]) -> str | None:
    """The strings any of ``patterns`` matches (None: none)."""
    found = list(dict.fromkeys(p for p in patterns if p is not None))
    if _ANY_TEXT in found:
        return _ANY_TEXT
    return "|".join(f"(?:{p})" for p in found) or None


def _joined(kids: list[Mapping[str, Any]]) -> str:
    """The strings ``join(sep, items)`` writes: its literal pieces in order when the
    separator and some items are literal strings, else any text."""
    if len(kids) != 2:
        return _ANY_TEXT
    sep, items = kids
    if sep.get("type") != "literal" or not isinstance(sep.get("value"), str):
        return _ANY_TEXT
    if items.get("type") != "multi_select_list":
        return _ANY_TEXT  # ``join(', ', hits[].path)``: any text
    parts = [
        re.escape(k["value"])
        if k.get("type") == "literal" and isinstance(k.get("value"), str)
        else "(?s:.*?)"
        for k in items.get("children", ())
    ]
    if all(p == "(?s:.*?)" for p in parts):
        return _ANY_TEXT
    return re.escape(str(sep["value"])).join(parts)


def is_string_selection(parsed: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` (not JSON) reads as a string the expression wrote (:func:`_strings`):
    any text for an expression that may select any string (``output``, ``result.stdout``,
    ``items[0]``, ``@``, ``a || b``, ``not_null(a, b)``, ``to_string(a)``, ``max(hits[].path)``,
    ``min_by(...)``, ``reverse(name)``, a ``join`` of values only: whether a text is their
    selection or a raw result cannot be told, so neither is noted); one of its six words
    for ``type``; the literal pieces, in order, of a ``join`` holding some."""
    pattern = _strings(parsed)
    return pattern is not None and re.fullmatch(pattern, text, re.S) is not None


_HANDLE = r"r-[0-9a-f]+"
"""What a recall handle reads as (``{handle}``)."""


@functools.lru_cache(maxsize=4096)
def _template_re(template: str, tool: str, call_id: str) -> re.Pattern[str] | None:
    """``template`` rendered for this call as a regular expression, compiled once: its
    ``{tool}`` and ``{call_id}`` as the call's own, numbers as digits (the first of each
    field named by it in the match), a handle as one (the same one each time, the match's
    ``handle``), other fields as any text. Every field but the last kind is bounded, so a
    search through a long text is linear: a template starting with ``{tool}`` as any text
    (``.*?``) was tried from every position, 20 s for a string of 83 kB."""
    out = []
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:  # not a template (only checked ones reach here)
        return None
    if not "".join(literal for literal, *_ in parts).strip():
        return None  # no text of its own (notice: ""): it would match any text
    handle = f"(?P<handle>{_HANDLE})"  # then the same again: ctxwin quotes one handle
    named: set[str] = set()
    for literal, name, _, _ in parts:
        out.append(re.escape(literal))
        if name is None:
            continue
        if name in ("tool", "call_id"):
            out.append(re.escape(tool if name == "tool" else call_id))
        elif name == "handle":
            out.append(handle)
            handle = "(?P=handle)"
        elif name in _NUMBER_FIELDS:
            out.append(r"\d+" if name in named else f"(?P<{name}>\\d+)")
            named.add(name)
        else:
            out.append(r".+?")
    return re.compile("".join(out), re.S)


@functools.lru_cache(maxsize=1024)
def _literal(template: str) -> str:
    """The longest text of ``template`` outside its fields: a text it renders to holds it
    (so one without it is told apart without building the call's regular expression)."""
    try:
        return max((literal for literal, *_ in string.Formatter().parse(template)), key=len)
    except ValueError:
        return ""


def is_marked(
    text: str, placeholders: Iterable[str], notices: Iterable[str], tool: str, call_id: str
) -> bool:
    """Whether ``text`` is a placeholder, or holds a notice, rendered for this call."""
    return bool(
        _rendered(text, placeholders, tool, call_id, _template_re, whole=True)
        or _rendered(text, notices, tool, call_id, _template_re)
    )


def _rendered(
    text: str,
    templates: Iterable[str],
    tool: str,
    call_id: str,
    pattern: Callable[[str, str, str], re.Pattern[str] | None],
    *,
    whole: bool = False,
) -> re.Match[str] | None:
    """Where ``text`` is (``whole``) or holds one of ``templates`` rendered for this call,
    as ``pattern`` reads a template (None: nowhere); one whose own text ``text`` lacks is
    not looked at."""
    for template in templates:
        if _literal(template) not in text:
            continue
        compiled = pattern(template, tool, call_id)
        found = (
            None if compiled is None else (compiled.fullmatch if whole else compiled.search)(text)
        )
        if found is not None:
            return found
    return None


def cap_notices(notice: str, recall_note: str) -> tuple[str, ...]:
    """The notices a cap of a tool whose notice is ``notice`` may write: it, or the default
    one a store outage falls back to, each alone or followed by the recall note."""
    return tuple(
        dict.fromkeys(n for b in (notice, DEFAULT_NOTICE) for n in (b, f"{b} {recall_note}"))
    )


def line_marked(text: str, notices: tuple[str, ...], tool: str, call_id: str) -> bool:
    """Whether ``text`` holds a notice rendered for this call on lines of its own: where a
    cut string holds it (``head\nnotice\ntail``; a notice may span lines)."""
    return _rendered(text, notices, tool, call_id, _line_re) is not None


@functools.lru_cache(maxsize=4096)
def _line_re(template: str, tool: str, call_id: str) -> re.Pattern[str] | None:
    """:func:`_template_re` standing on lines of its own."""
    compiled = _template_re(template, tool, call_id)
    return (
        None
        if compiled is None
        else re.compile(f"(?:\\A|\n)(?:{compiled.pattern})(?:\n|\\Z)", re.S)
    )


def noted(text: str, note: str) -> str:
    """``text`` followed by the recall ``note``: inside it, where a JSON cut would put its
    notice, when it is a JSON array or object; else on a line of its own after it."""
    return with_note(text, note) or f"{text}\n{note}"


def as_sent(new: str, info: ResultInfo, ctx: Context) -> str:
    """A step's new text ``new`` as the request sends it: with recall on (``info.handle``),
    followed by the recall note, which :class:`~ctxwin.steps.edit_results.EditResults` adds
    after the chain where the text quotes no handle. A step that shortens a result measures
    this against it: the note may make it no shorter."""
    if info.handle is None or info.handle in new:
        return new
    fields = {"tool": info.tool, "call_id": info.call_id or "", "handle": info.handle}
    return noted(new, ctx.config.recall.note.format(**fields))


def without_note(text: str, note: str, tool: str, call_id: str) -> str | None:
    """``text`` without the recall note (the template ``note`` rendered for this call) on
    the lines it ends with, as :func:`noted` puts it after a text; None when it ends with
    none."""
    if _literal(note) not in text:
        return None
    compiled = _end_re(note, tool, call_id)
    found = None if compiled is None else compiled.search(text)
    return None if found is None else text[: found.start()]


@functools.lru_cache(maxsize=1024)
def _end_re(template: str, tool: str, call_id: str) -> re.Pattern[str] | None:
    """:func:`_template_re` on the lines a text ends with."""
    compiled = _template_re(template, tool, call_id)
    return None if compiled is None else re.compile(f"\n(?:{compiled.pattern})\\Z", re.S)


_NOTICE_DEPTH = MAX_DIVE + 2
"""How deep a JSON cut writes its notice: in a container ``MAX_DIVE`` levels down at most,
as an item ``{"...": notice}`` of it (the notice's string two levels further)."""


@functools.lru_cache(maxsize=256)
def _leads(templates: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str] | None]:
    """The literal texts renderings of ``templates`` start with, and how they are written
    inside a JSON text (as they are, or escaped as ``json.dumps`` escapes them): a JSON text
    holding none of these holds no rendering (``None``: a template starting with a field,
    which any text may start)."""
    leads = set()
    for template in templates:
        try:
            first = next(iter(string.Formatter().parse(template)), None)
        except ValueError:  # not a template (only checked ones reach here)
            first = (template, None, None, None)
        leads.add(first[0] if first is not None else "")
    if "" in leads:
        return frozenset(leads), None
    written = {json.dumps(lead, ensure_ascii=a)[1:-1] for lead in leads for a in (True, False)}
    return frozenset(leads), frozenset(written)


def json_marked(text: str, data: object, notices: Iterable[str], tool: str, call_id: str) -> bool:
    """Whether JSON (``text``, parsed: ``data``) holds a notice ctxwin put in it, where a
    JSON cut or the recall note puts one, at most :data:`_NOTICE_DEPTH` levels down: the
    value of a ``"..."`` member (an item ``{"...": notice}`` of an array too), or a line of
    its own in a cut string (``"head\\nnotice\\ntail"``). A notice quoted elsewhere in a
    raw result (an issue body with a pasted agent log) does not make it ctxwin's."""
    return _json_notice(text, data, tuple(notices), tool, call_id) is not None


def _json_notice(
    text: str, data: object, found: tuple[str, ...], tool: str, call_id: str
) -> tuple[re.Match[str], str] | None:
    """The first notice :func:`json_marked` finds, as a match of its template, and the
    notice as written (a ``"..."`` member's whole value)."""
    leads, written = _leads(found)
    if written is not None and not any(w in text for w in written):
        return None  # no notice starts anywhere in the text
    level = [data]
    for _ in range(_NOTICE_DEPTH + 1):
        nxt: list[object] = []
        for value in level:
            if isinstance(value, str):
                lead = "\n" in value and any(lead in value for lead in leads)
                at = _rendered(value, found, tool, call_id, _line_re) if lead else None
                if at is not None:
                    return at, at.group(0).strip("\n")
            elif isinstance(value, dict):
                for k, v in value.items():
                    at = None
                    if isinstance(v, str) and k.startswith("..."):
                        at = _rendered(v, found, tool, call_id, _template_re)
                    if at is not None:
                        return at, str(v)
                    nxt.append(v)
            elif isinstance(value, list):
                nxt.extend(value)
        level = [v for v in nxt if isinstance(v, dict | list | str)]
        if not level:
            return None
    return None


class Quoted(NamedTuple):
    """A notice of ctxwin's quoting a recall handle, found where ctxwin writes one."""

    handle: str
    notice: str
    """The notice as it stands in the text (a JSON string's value: unescaped)."""
    figures: dict[str, int]
    """Its numbers by field (``omitted_tokens``, ``total_tokens``, ``kept_tokens``)."""


def quoted_notice(
    text: str, data: object, notices: Iterable[str], tool: str, call_id: str
) -> Quoted | None:
    """The notice of ``notices`` quoting a recall handle where ctxwin puts one for this
    call: in ``text`` on a line of its own (:func:`line_marked`), or, given ``data`` (the
    text parsed as JSON), where :func:`json_marked` looks; None when none stands there. A
    handle merely quoted in a raw result is no notice's; one that stands so may still be
    raw output holding such a line word for word (the caller checks it)."""
    found = tuple(n for n in notices if "{handle}" in n)
    if not found or "r-" not in text:
        return None
    if data is None:
        at = _rendered(text, found, tool, call_id, _line_re)
        got = None if at is None else (at, at.group(0).strip("\n"))
    else:
        got = _json_notice(text, data, found, tool, call_id)
    if got is None:
        return None
    at, notice = got
    figures = {k: int(v) for k, v in at.groupdict().items() if k in _NUMBER_FIELDS and v}
    return Quoted(at.group("handle"), notice, figures)
