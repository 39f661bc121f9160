"""Compiling a policy: everything checked and prepared at load time, so a policy that loads
is a policy that runs.

JMESPath is compiled once, templates are checked for unknown fields, budgets for agreement,
the tokenizer for being one ctxwin (or the caller) knows. All errors of a load are reported
together (:class:`~ctxwin.PolicyErrors`), each with its file, line and key.
"""

from __future__ import annotations

import fnmatch
import re
import string
import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jmespath
import jmespath.functions
from jmespath.exceptions import JMESPathError, ParseError
from jmespath.lexer import Lexer
from pydantic import ValidationError

from ctxwin._exceptions import PolicyError, PolicyErrors
from ctxwin._policy.load import (
    NOWHERE,
    KeyPath,
    Located,
    not_a_name,
    policy_files,
    policy_path,
    pydantic_errors,
    read_yaml,
)
from ctxwin._policy.schema import (
    NOTICE_FIELDS,
    PLACEHOLDER_FIELDS,
    RECALL_NOTE_FIELDS,
    REPAIR_FIELDS,
    PolicyConfig,
    ToolFile,
    ToolRules,
)
from ctxwin._policy.yamltext import excerpt
from ctxwin.tokens.counters import TOKENIZERS

RECALL_TOOL = "recall"
"""The name of the tool that gives back what a step shortened (see ``recall:``)."""

__all__ = [
    "RECALL_TOOL",
    "CompiledPolicy",
    "CompiledTool",
    "PolicySource",
    "compile_policy",
    "validate_config",
]

PolicySource = str | Path | Mapping[str, Any] | PolicyConfig
"""What a policy loads from: a folder or file of YAML, a dict, or a config object."""


@dataclass(frozen=True)
class CompiledTool:
    """A tool's rules, validated and compiled (JMESPath compiled once)."""

    pattern: str
    rules: ToolRules
    select: Any  # jmespath.parser.ParsedResult | None
    source: str  # file (and key) it came from


@dataclass(frozen=True)
class CompiledPolicy:
    config: PolicyConfig
    tools: tuple[CompiledTool, ...]  # most specific first; '*' last
    sources: tuple[str, ...]

    _found: dict[str, CompiledTool | None] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """Each tool name's rules once looked up (the tools never change)."""

    def rules_for(self, tool: str) -> CompiledTool | None:
        found = self._found
        if tool in found:
            return found[tool]
        hit = next(
            (t for t in self.tools if t.pattern == tool or fnmatch.fnmatchcase(tool, t.pattern)),
            None,
        )
        if len(found) < 10_000:  # tool names come from requests: bounded
            found[tool] = hit
        return hit


@dataclass(frozen=True, slots=True)
class _ToolEntry:
    """One tool's rules as found: a tool file, or an entry of the defaults' ``tools:``."""

    pattern: object
    rules: ToolRules | None
    """``None`` when they did not validate (the errors are already recorded)."""
    raw: Mapping[str, Any]
    loc: Located
    path: KeyPath
    """Key path of the rules in their file (``()`` for a tool file)."""
    label: str
    """Where they are, for "already has rules in ..." errors."""


@dataclass
class _Load:
    """What reading the sources found, before compiling."""

    config: PolicyConfig | None = None
    config_loc: Located = NOWHERE
    config_raw: Mapping[str, Any] = field(default_factory=dict)
    entries: list[_ToolEntry] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    errors: list[PolicyError] = field(default_factory=list)


def compile_policy(
    source: PolicySource,
    *,
    tokenizers: Collection[str] | None = TOKENIZERS,
    follow_symlinks: bool = False,
) -> CompiledPolicy:
    """Load, validate and compile a policy from a folder, a file, a dict or a config object.

    ``tokenizers`` are the names ``tokenizer:`` may take (``None``: not checked, because the
    caller counts with a counter of its own). ``follow_symlinks``: read the files of a
    policy folder that link out of it (refused by default).
    """
    found = _read(source, follow_symlinks)
    _collect_entries(found)
    tools = _compile_tools(found)
    if found.config is not None and tokenizers is not None:
        _check_tokenizer(found, tokenizers)
    if found.config is not None:
        _check_window(found)
    if found.errors:
        errors = sorted(found.errors, key=lambda e: (e.file or "", e.line or 0))
        raise errors[0] if len(errors) == 1 else PolicyErrors(errors)
    assert found.config is not None
    tools.sort(key=lambda t: _specificity(t.pattern))
    config = found.config
    recalling = config.recall.enabled or any(t.rules.recall for t in tools)  # recall_enabled
    if recalling and not any(t.pattern == RECALL_TOOL for t in tools):
        # The recall tool's own answers are capped like any result: a recall cannot blow
        # the window. Rules naming it (a tool file `tool: recall`) win over these.
        rules = ToolRules(max_tokens=config.recall.max_tokens, truncate="head")
        tools.insert(0, CompiledTool(RECALL_TOOL, rules, None, "<recall>"))
    return CompiledPolicy(config=config, tools=tuple(tools), sources=tuple(found.sources))


def validate_config(data: Mapping[str, Any]) -> PolicyConfig:
    """A defaults config from plain data, with the errors a policy file would give."""
    found = _Load()
    config = found.config = _validate_config(data, NOWHERE, found)
    if config is not None:
        _check_window(found)
    if found.errors or config is None:
        raise found.errors[0] if len(found.errors) == 1 else PolicyErrors(found.errors)
    return config


# ------------------------------------------------------------------------------ phases


def _read(source: PolicySource, follow_symlinks: bool = False) -> _Load:
    found = _Load()
    if isinstance(source, PolicyConfig):
        found.config, found.config_raw = source, source.model_dump()
    elif isinstance(source, Mapping):
        found.config_raw = source
        found.config = _validate_config(source, NOWHERE, found)
    else:
        for file in policy_files(policy_path(source), follow_symlinks=follow_symlinks):
            found.sources.append(str(file))
            _read_file(file, found)
        if found.config is None and found.config_loc is NOWHERE:
            found.config = PolicyConfig()
    return found


def _read_file(file: Path, found: _Load) -> None:
    try:
        data, loc = read_yaml(file)
    except PolicyError as e:
        found.errors.append(e)
        return
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        found.errors.append(
            PolicyError(
                f"a policy file holds a mapping, not a {type(data).__name__}",
                file=str(file),
                line=1,
            )
        )
    elif "tool" in data:
        rules: ToolRules | None = None
        try:
            tf = ToolFile.model_validate(data)
            rules = ToolRules.model_validate(tf.model_dump(exclude={"tool"}))
        except ValidationError as e:
            found.errors.extend(pydantic_errors(e, loc, ToolFile))
        found.entries.append(_ToolEntry(data["tool"], rules, data, loc, (), str(file)))
    elif found.config_loc is not NOWHERE:
        found.errors.append(
            PolicyError(
                f"a second defaults file (the first is {found.config_loc.file}); "
                "give per-tool files a 'tool:' key",
                file=str(file),
                line=1,
            )
        )
    else:
        found.config_loc, found.config_raw = loc, data
        found.config = _validate_config(data, loc, found)


def _validate_config(data: Mapping[str, Any], loc: Located, found: _Load) -> PolicyConfig | None:
    try:
        return PolicyConfig.model_validate(data)
    except ValidationError as e:
        found.errors.extend(pydantic_errors(e, loc, PolicyConfig))
        return None


def _collect_entries(found: _Load) -> None:
    """The defaults' ``tools:`` entries, and the window placeholder's template check."""
    loc, raw = found.config_loc, found.config_raw
    raw_tools = raw.get("tools")
    if isinstance(raw_tools, Mapping):
        for pattern, rules_raw in raw_tools.items():
            if isinstance(rules_raw, Mapping):
                rules = found.config.tools.get(pattern) if found.config is not None else None
                label = f"{loc.file}: tools.{pattern}"
                found.entries.append(
                    _ToolEntry(pattern, rules, rules_raw, loc, ("tools", pattern), label)
                )
    window = raw.get("window")
    if isinstance(window, Mapping) and isinstance(window.get("placeholder"), str):
        problem = _template_errors(window["placeholder"], PLACEHOLDER_FIELDS)
        if problem:
            found.errors.append(loc.error(("window", "placeholder"), problem))
    recall = raw.get("recall")
    if isinstance(recall, Mapping) and isinstance(recall.get("note"), str):
        problem = _template_errors(recall["note"], RECALL_NOTE_FIELDS)
        if problem:
            found.errors.append(loc.error(("recall", "note"), problem))
    repair = raw.get("repair")
    for key in ("missing_result", "empty_result", "first_user"):
        value = repair.get(key) if isinstance(repair, Mapping) else None
        if isinstance(value, str):
            fields = REPAIR_FIELDS if key == "missing_result" else frozenset()
            problem = _template_errors(value, fields)
            if problem:
                found.errors.append(loc.error(("repair", key), problem))


def _compile_tools(found: _Load) -> list[CompiledTool]:
    compiled: list[CompiledTool] = []
    seen: dict[str, str] = {}
    for entry in found.entries:
        at = entry.path or ("tool",)
        problem = _check_pattern(entry.pattern, entry.loc, at)
        if problem is not None:
            found.errors.append(problem)
            continue
        assert isinstance(entry.pattern, str)
        if entry.pattern in seen:
            found.errors.append(
                entry.loc.error(
                    at, f"tool {excerpt(entry.pattern)} already has rules in {seen[entry.pattern]}"
                )
            )
            continue
        seen[entry.pattern] = entry.label
        expr, errs = _check_raw(entry.raw, entry.loc, entry.path)
        found.errors.extend(errs)
        if entry.rules is not None:
            compiled.append(CompiledTool(entry.pattern, entry.rules, expr, entry.label))
    return compiled


def _check_tokenizer(found: _Load, known: Collection[str]) -> None:
    assert found.config is not None
    name = found.config.tokenizer
    if name in known:
        return
    names = ", ".join(t for t in TOKENIZERS if t != "approx-4-chars")
    found.errors.append(
        found.config_loc.error(
            ("tokenizer",),
            f"unknown tokenizer {excerpt(name)}: use {names}, or pass "
            f"load_policy(counters={{{excerpt(name)}: ...}})",
        )
    )


def _check_window(found: _Load) -> None:
    """A trigger or target in tokens (> 1) must fit in a context window given in tokens."""
    assert found.config is not None
    limit, window = found.config.context_window, found.config.window
    if not isinstance(limit, int):
        return
    for key in ("trigger", "target", "drop_target"):
        value = getattr(window, key)
        if value is not None and value > 1 and value > limit:
            found.errors.append(
                found.config_loc.error(
                    ("window", key),
                    f"{key} {value:g} tokens is above the context window ({limit} tokens)",
                )
            )
            return


# ------------------------------------------------------------------------------ checks


def _specificity(pattern: str) -> tuple[int, int, str]:
    wild = sum(pattern.count(c) for c in "*?[")
    return (0 if wild == 0 else 1, -len(pattern.replace("*", "").replace("?", "")), pattern)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _template_errors(text: str, allowed: frozenset[str]) -> str | None:
    """Why a template is refused, or ``None``. Only plain named fields (``{tool}``): no
    index, attribute, format spec or conversion, so rendering cannot fail, reach into
    objects, or pad a text to any width."""
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


def _compile_select(expr: str, loc: Located, path: KeyPath) -> tuple[Any, PolicyError | None]:
    for at, text in _old_literals(expr):
        warnings.warn(
            loc.warning(
                (*path, "select"),
                f"deprecated JMESPath literal at column {at}: write the string "
                f"{_short(text)!r} in single quotes ('...') or as JSON (`\"...\"`)",
                detail=_caret(expr, at),
                column=at,
            ),
            stacklevel=2,
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)  # warned of above
            compiled = jmespath.compile(expr)
    except JMESPathError as e:
        col = getattr(e, "lex_position", None)
        col = col + 1 if isinstance(col, int) else None
        reason = str(e).splitlines()[0].replace("Invalid jmespath expression: ", "")
        if type(e).__name__ == "IncompleteExpressionError":
            reason = "incomplete expression"
        elif isinstance(e, ParseError) and e.token_type is not None:
            reason = (
                f"unexpected {e.token_value!r}"
                if e.token_value not in (None, "")
                else f"unexpected {e.token_type}"
            )
        where = f" at column {col}" if col is not None else ""
        return None, loc.error(
            (*path, "select"),
            f"invalid JMESPath{where}: {_short(reason, 80)}",
            detail=_caret(expr, col),
            column=col,
        )
    problem = _function_problem(compiled.parsed)
    if problem is None:
        return compiled, None
    name, why = problem
    found = re.search(rf"(?<![\w\"']){re.escape(name)}\s*\(", expr)
    col = found.start() + 1 if found else None
    where = f" at column {col}" if col is not None else ""
    return None, loc.error(
        (*path, "select"), f"invalid JMESPath{where}: {why}", detail=_caret(expr, col), column=col
    )


def _check_raw(
    raw: Mapping[str, Any], loc: Located, path: KeyPath
) -> tuple[Any, list[PolicyError]]:
    """Checks pydantic cannot make, on the raw values (so they run even when the file has
    other errors): JMESPath compiles, templates name known fields, budgets agree."""
    errors: list[PolicyError] = []
    compiled = None
    select = raw.get("select")
    if isinstance(select, str):
        compiled, err = _compile_select(select, loc, path)
        if err is not None:
            errors.append(err)
    for key, allowed in (("notice", NOTICE_FIELDS), ("placeholder", PLACEHOLDER_FIELDS)):
        value = raw.get(key)
        if isinstance(value, str):
            problem = _template_errors(value, allowed)
            if problem:
                errors.append(loc.error((*path, key), problem))
    summarize = raw.get("summarize")
    cap = raw.get("max_tokens")
    if isinstance(summarize, Mapping) and isinstance(cap, int):
        budget = summarize.get("max_tokens")
        if isinstance(budget, int) and budget > cap:
            errors.append(
                loc.error(
                    (*path, "summarize", "max_tokens"),
                    f"summary budget {budget} is above the tool's max_tokens {cap}",
                )
            )
    return compiled, errors


def _check_pattern(pattern: object, loc: Located, path: KeyPath) -> PolicyError | None:
    if not isinstance(pattern, str) or not pattern.strip():
        return loc.error(path, not_a_name(pattern))
    if pattern.count("[") != pattern.count("]"):
        return loc.error(path, f"invalid glob {excerpt(pattern)}: unbalanced brackets")
    return None
