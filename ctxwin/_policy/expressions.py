"""The checks of a policy's text values at load time: JMESPath compiled (functions and
their arity checked, the column of a mistake shown with a caret) and templates limited to
plain named fields."""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
import jmespath.functions
from jmespath.exceptions import JMESPathError, ParseError
from jmespath.lexer import Lexer

from ctxwin._exceptions import PolicyError
from ctxwin._policy.load import KeyPath, Located

__all__ = ["MAX_SELECT_DEPTH", "compile_select", "template_errors"]


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def template_errors(
    text: str,
    allowed: frozenset[str],
    *,
    marks: bool = False,
    needs: tuple[str, str] | None = None,
) -> str | None:
    """Why a template is refused, or ``None``. Only plain named fields (``{tool}``): no
    index, attribute, format spec or conversion, so rendering cannot fail, reach into
    objects, or pad a text to any width. ``marks``: a template marking ctxwin's own output
    (a notice, a placeholder) needs text of its own besides its fields, which is how a later
    pass tells that output apart. ``needs``: a field the template must quote, and why (the
    recall note's ``{handle}``)."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as e:
        return f"invalid template: {e}"
    names = ", ".join("{" + a + "}" for a in sorted(allowed)) or "none"
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if spec or conversion is not None or not name.isidentifier():
            whole = name + (f"!{conversion}" if conversion is not None else "")
            whole += f":{spec}" if spec else ""
            return (
                f"template field {{{_short(whole)}}} is not a plain name "
                f"(no index, attribute, format spec or conversion; allowed: {names})"
            )
        if name not in allowed:
            return f"unknown template field {{{_short(name)}}} (allowed: {names})"
    if marks and not "".join(literal for literal, *_ in parts).strip():
        return (
            f"template {_short(text)!r} has no text of its own besides its fields: ctxwin "
            "tells its own notices and placeholders apart by it (without, a capped or "
            "cleared result would be edited again on every pass)"
        )
    if needs is not None and all(name != needs[0] for _, name, *_ in parts):
        return f"must quote {{{needs[0]}}}: {needs[1]} (got {_short(text)!r})"
    return None


_FUNCTIONS: Mapping[str, Any] = jmespath.functions.Functions.FUNCTION_TABLE
"""JMESPath's built-in functions, by name, with their signatures."""


def _function_problem(parsed: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first call of an unknown function, or with the wrong number of arguments, in a
    parsed expression (``jmespath.compile`` leaves both to run time): (name, why)."""
    stack = [parsed]
    while stack:
        node = stack.pop()
        if node.get("type") == "function_expression":
            name, given = str(node.get("value")), len(node.get("children", ()))
            if name not in _FUNCTIONS:
                known = ", ".join(sorted(_FUNCTIONS))
                return name, f"unknown function {_short(name)}() (JMESPath has: {known})"
            signature = _FUNCTIONS[name]["signature"]
            variadic = bool(signature) and signature[-1].get("variadic")
            want = len(signature)
            if (given < want) if variadic else (given != want):
                many = f"at least {want}" if variadic else str(want)
                return name, f"{name}() takes {many} argument{'s' * (want != 1)}, got {given}"
        stack.extend(reversed([c for c in node.get("children", ()) if isinstance(c, Mapping)]))
    return None


def _caret(expr: str, col: int | None) -> str:
    """The expression (a window of it, when long) with a caret under ``col``."""
    at = (col or 1) - 1
    start = max(0, min(at - 40, len(expr) - 80))
    shown = expr[start : start + 80]
    return f"    {shown}\n    {' ' * (at - start)}^"


@dataclass(frozen=True, slots=True)
class _Spot:
    """Where in an expression a problem is, as its error says it."""

    words: str
    """`` at column 7``, or `` at line 2, column 7 of the expression``, or ``""``."""
    column: int | None
    """The column in the expression's line (its only line, usually)."""
    detail: str | None
    """That line with a caret under the column."""


def _spot(expr: str, col: int | None) -> _Spot:
    """Where column ``col`` of an expression is (1-based, over the whole text). An
    expression written over several lines (``select: |``) is shown by its line: the caret
    under the whole text pointed into the wrong line."""
    if col is None:
        return _Spot("", None, _caret(expr, None) if expr.strip() else None)
    col = min(col, len(expr.rstrip()) + 1)  # the end of an incomplete one: after its text
    if "\n" not in expr:
        return _Spot(f" at column {col}", col, _caret(expr, col))
    start = expr.rfind("\n", 0, col - 1) + 1
    end = expr.find("\n", start)
    line, column = expr.count("\n", 0, start) + 1, col - start
    text = expr[start : end if end >= 0 else len(expr)]
    return _Spot(
        f" at line {line}, column {column} of the expression", column, _caret(text, column)
    )


def _old_literals(expr: str) -> list[tuple[int, str]]:
    """JMESPath's deprecated backtick literals whose text is not JSON (``foo`` between
    backticks, read as the string "foo"): (column, text) of each. jmespath warns of them
    only the first time it compiles an expression (it caches the rest), so they are found
    by lexing it here."""
    found: list[tuple[int, str]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for token in Lexer().tokenize(expr):
                if caught:
                    found.append((int(token["start"]) + 1, str(token["value"])))
                    caught.clear()
        except JMESPathError:
            pass  # compiling reports it
    return found


MAX_SELECT_DEPTH = 64
"""How deep a ``select:`` expression may nest (its parse tree: brackets, parentheses,
function calls, operators such as ``||``, and the arrays and objects of a backtick literal).
Real ones stay under 10; deeper ones would exhaust Python's stack, when compiled or when
run."""


def _deeper_than(parsed: Mapping[str, Any], limit: int) -> bool:
    """Whether a parsed expression nests deeper than ``limit``, a literal's JSON value
    within it (iterative: any depth)."""
    stack: list[tuple[Mapping[str, Any], int]] = [(parsed, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in node.get("children", ()) if isinstance(c, Mapping))
        if node.get("type") == "literal" and _json_deeper(node.get("value"), depth + 1, limit):
            return True
    return False


def _json_deeper(value: object, depth: int, limit: int) -> bool:
    """Whether the arrays and objects of ``value`` (a literal's, at ``depth``) nest deeper
    than ``limit``."""
    stack: list[tuple[object, int]] = [(value, depth)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, Mapping | list):
            if at > limit:
                return True
            stack.extend(
                (v, at + 1) for v in (item.values() if isinstance(item, Mapping) else item)
            )
    return False


def _too_deep(loc: Located, path: KeyPath) -> PolicyError:
    return loc.error(
        (*path, "select"),
        f"invalid JMESPath: nested more than {MAX_SELECT_DEPTH} levels deep (brackets, "
        "parentheses, function calls, operators): simplify it",
    )


def compile_select(expr: str, loc: Located, path: KeyPath) -> tuple[Any, PolicyError | None]:
    try:
        old = _old_literals(expr)
    except RecursionError:  # jmespath's lexer json.loads each literal, recursively
        return None, _too_deep(loc, path)
    for at, text in old:
        spot = _spot(expr, at)
        warnings.warn(
            loc.warning(
                (*path, "select"),
                f"deprecated JMESPath literal{spot.words}: write the string "
                f"{_short(text)!r} in single quotes ('...') or as JSON (`\"...\"`)",
                detail=spot.detail,
                column=spot.column,
            ),
            stacklevel=2,
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)  # warned of above
            compiled = jmespath.compile(expr)
    except RecursionError:  # jmespath's parser recurses once or more per level
        return None, _too_deep(loc, path)
    except JMESPathError as e:
        col = getattr(e, "lex_position", None)
        col = col + 1 if isinstance(col, int) else None
        reason = str(e).splitlines()[0].replace("Invalid jmespath expression: ", "")
        if not expr.strip():
            reason, col = "the expression is empty", None
        elif type(e).__name__ == "IncompleteExpressionError":
            reason = "incomplete expression"
        elif isinstance(e, ParseError) and e.token_type is not None:
            reason = (
                f"unexpected {e.token_value!r}"
                if e.token_value not in (None, "")
                else f"unexpected {e.token_type}"
            )
        spot = _spot(expr, col)
        return None, loc.error(
            (*path, "select"),
            f"invalid JMESPath{spot.words}: {_short(reason, 80)}",
            detail=spot.detail,
            column=spot.column,
        )
    if _deeper_than(compiled.parsed, MAX_SELECT_DEPTH):  # run recursively (jmespath's, ours)
        return None, _too_deep(loc, path)
    problem = _function_problem(compiled.parsed)
    if problem is None:
        return compiled, None
    name, why = problem
    found = re.search(rf"(?<![\w\"']){re.escape(name)}\s*\(", expr)
    col = found.start() + 1 if found else None
    spot = _spot(expr, col)
    return None, loc.error(
        (*path, "select"),
        f"invalid JMESPath{spot.words}: {why}",
        detail=spot.detail,
        column=spot.column,
    )
