"""Recognizing ctxwin's own output, so that applying a policy to its output edits nothing.

``apply(apply(x).body)`` must report no new edits. The select step sees, on the second
pass, texts that ctxwin wrote itself: a selection (compact JSON the expression may no
longer match: ``hits[].path`` selects nothing from the list it produced), a window
placeholder, a capped text with its notice. These are told from the text alone (a memo of
earlier outputs would make the report depend on what was applied before):

- :func:`is_selection`: compact JSON as ctxwin writes it, whose shape is one the
  expression can produce (a multi-select's keys in order, a projection's list...);
- :func:`is_marked`: a placeholder or a notice rendered from the policy's templates for
  this tool and call.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from ctxwin._core.jsontext import compact_json

__all__ = ["is_marked", "is_selection"]

_NUMBER = frozenset({"abs", "avg", "ceil", "floor", "length", "sum", "to_number"})
_BOOL = frozenset({"contains", "ends_with", "starts_with"})
_LIST = frozenset({"keys", "reverse", "sort", "sort_by", "to_array", "values", "map"})
_NUMBER_FIELDS = frozenset({"tokens", "omitted_tokens", "total_tokens", "kept_tokens"})


def _fits(node: Mapping[str, Any], value: object) -> bool:
    """Whether ``value`` can be what the parsed expression ``node`` evaluates to."""
    kind = node.get("type")
    kids: list[Mapping[str, Any]] = list(node.get("children", ()))
    if kind == "multi_select_dict":
        keys = [k.get("value") for k in kids]
        return (
            isinstance(value, dict)
            and list(value) == keys
            and all(
                value[k.get("value")] is None or _fits(k["children"][0], value[k.get("value")])
                for k in kids
            )
        )
    if kind == "multi_select_list":
        return (
            isinstance(value, list)
            and len(value) == len(kids)
            and all(v is None or _fits(k, v) for k, v in zip(kids, value, strict=True))
        )
    if kind in ("projection", "value_projection", "filter_projection"):
        return isinstance(value, list) and all(_fits(kids[1], v) for v in value)
    if kind == "flatten":
        return isinstance(value, list)
    if kind in ("pipe", "subexpression"):
        return _fits(kids[-1], value)
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
            return isinstance(value, list)
        if name == "merge":
            return isinstance(value, dict)
    return True  # a field, an index, the current node...: any value


def is_selection(parsed: Mapping[str, Any], text: str, data: object) -> bool:
    """Whether ``text`` (parsed: ``data``) reads as a selection the expression wrote."""
    return compact_json(data) == text and _fits(parsed, data)


def _pattern(template: str, fields: Mapping[str, str]) -> str:
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if name is None:
            continue
        if name in fields:
            out.append(re.escape(fields[name]))
        else:
            out.append(r"\d+" if name in _NUMBER_FIELDS else r".+?")
    return "".join(out)


def is_marked(
    text: str, placeholders: Iterable[str], notices: Iterable[str], tool: str, call_id: str
) -> bool:
    """Whether ``text`` is a placeholder, or holds a notice, rendered for this call."""
    fields = {"tool": tool, "call_id": call_id}
    try:
        if any(re.fullmatch(_pattern(p, fields), text, re.S) for p in placeholders):
            return True
        return any(re.search(_pattern(n, fields), text) for n in notices)
    except ValueError:  # not a template (only checked ones reach here)
        return False
