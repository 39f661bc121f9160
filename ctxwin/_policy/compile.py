"""Compiling a policy: everything checked and prepared at load time, so a policy that loads
is a policy that runs.

JMESPath is compiled once, templates are checked for unknown fields, budgets for agreement,
the tokenizer for being one ctxwin (or the caller) knows. All errors of a load are reported
together (:class:`~ctxwin.PolicyErrors`), each with its file, line and key.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ctxwin._exceptions import PolicyError, PolicyErrors
from ctxwin._policy.expressions import compile_select, template_errors
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
from ctxwin._policy.yamltext import MAX_DEPTH, excerpt
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


_SERIALS = itertools.count()


@dataclass(frozen=True)
class CompiledPolicy:
    config: PolicyConfig
    tools: tuple[CompiledTool, ...]  # most specific first; '*' last
    sources: tuple[str, ...]
    folder: str | None = None
    """The folder the policy was read from (None: one file, a dict, a config)."""

    _found: dict[str, CompiledTool | None] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """Each tool name's rules once looked up (the tools never change)."""
    serial: int = field(
        default_factory=lambda: next(_SERIALS), init=False, compare=False, repr=False
    )
    """This object's number, never another's: what memos key a policy's entries by (an
    ``id()`` is reused once its object is freed, and a copy made per request and dropped,
    ``Policy.with_overrides``, left its entries to the next copy given the same id)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled (``ctxwin replay --jobs`` sends the policy it loaded to its workers) or
        copied: a serial of this process, which no other object of it has, and lookups of
        its own."""
        self.__dict__.update(state)
        self.__dict__["serial"] = next(_SERIALS)
        self.__dict__["_found"] = {}

    @cached_property
    def holds_latest(self) -> bool:
        """Whether some tool's results go whole while their round is the latest
        (``edit_latest: false``): found once."""
        return any(not t.rules.edit_latest for t in self.tools)

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
    folder: str | None = None
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
    _warn_of_dead_handles(found, config, recalling)
    if recalling:
        _recall_rules(tools, config)
    return CompiledPolicy(
        config=config, tools=tuple(tools), sources=tuple(found.sources), folder=found.folder
    )


def _recall_rules(tools: list[CompiledTool], config: PolicyConfig) -> None:
    """Give the recall tool its rules, in place, in a policy that recalls (for some tools
    only, too). Its own answers are capped, so that a recall cannot blow the window, and
    recall is on for them, so that an answer over the cap is paged by whole lines
    (steps/_recall.py) and a later clearing quotes a handle: with ``recall:`` on for one
    tool only, it was off for them, and a long answer was cut by tokens, with no lines and
    no next range. Rules naming it (a tool file ``tool: recall``) win over these, recall
    on unless they say ``recall: false``."""
    for i, tool in enumerate(tools):
        if tool.pattern == RECALL_TOOL:
            if tool.rules.recall is None:
                rules = tool.rules.model_copy(update={"recall": True})
                tools[i] = dataclasses.replace(tool, rules=rules)
            return
    rules = ToolRules(max_tokens=config.recall.max_tokens, truncate="head", recall=True)
    tools.insert(0, CompiledTool(RECALL_TOOL, rules, None, "<recall>"))


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
        found.config_raw = raw = _as_dicts(source)
        found.config = _validate_config(raw, NOWHERE, found)
    else:
        path = policy_path(source)
        files = policy_files(path, follow_symlinks=follow_symlinks)  # first: it checks the path
        found.folder = str(path) if path.is_dir() else None
        for file in files:
            found.sources.append(str(file))
            _read_file(file, found)
        if found.config is None and found.config_loc is NOWHERE:
            found.config = PolicyConfig()
    return found


def _as_dicts(data: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """A policy given as mappings of any kind (``MappingProxyType``, a config library's
    mapping) or holding config objects (``tools: {"a": ToolRules(...)}``) as the plain dicts
    a file gives, so that every check reads them alike (tool rules given as objects were
    left out, their JMESPath unchecked); nesting is bounded as in a file."""
    if depth > MAX_DEPTH:
        raise PolicyError(f"nested deeper than {MAX_DEPTH} levels")
    out = {}
    for key, value in data.items():
        if isinstance(value, BaseModel):
            value = value.model_dump()
        out[key] = _as_dicts(value, depth + 1) if isinstance(value, Mapping) else value
    return out


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


_NOTE_NEEDS = ("handle", "the note is what tells the agent which original to recall")
"""What ``recall.note`` must quote: without it, a shortened result tells the agent to
recall but not what, and its original is kept where nothing can reach it."""


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
        problem = template_errors(window["placeholder"], PLACEHOLDER_FIELDS, marks=True)
        if problem:
            found.errors.append(loc.error(("window", "placeholder"), problem))
    recall = raw.get("recall")
    if isinstance(recall, Mapping) and isinstance(recall.get("note"), str):
        problem = template_errors(recall["note"], RECALL_NOTE_FIELDS, needs=_NOTE_NEEDS)
        if problem:
            found.errors.append(loc.error(("recall", "note"), problem))
    repair = raw.get("repair")
    for key in ("missing_result", "empty_result", "first_user", "last_user"):
        value = repair.get(key) if isinstance(repair, Mapping) else None
        if isinstance(value, str):
            fields = REPAIR_FIELDS if key == "missing_result" else frozenset()
            problem = template_errors(value, fields)
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
                    at,
                    f"tool {excerpt(entry.pattern)} already has rules in {seen[entry.pattern]}",
                    key=True,
                )
            )
            continue
        seen[entry.pattern] = entry.label
        expr, errs = _check_raw(entry.raw, entry.loc, entry.path)
        found.errors.extend(errs)
        if entry.rules is not None:
            compiled.append(CompiledTool(entry.pattern, entry.rules, expr, entry.label))
    return compiled


def _warn_of_dead_handles(found: _Load, config: PolicyConfig, recalling: bool) -> None:
    """Warn of a template quoting ``{handle}`` where recall is off: the step then writes
    the default text instead (as when the store is down), not the template."""
    said = "the template quotes {handle}, but recall is off%s: the default text is used instead"
    if not recalling and "{handle}" in config.window.placeholder:
        where = " (recall: true turns it on)"
        warnings.warn(
            found.config_loc.warning(("window", "placeholder"), said % where), stacklevel=3
        )
    for entry in found.entries:
        if entry.rules is None:
            continue
        on = entry.rules.recall if entry.rules.recall is not None else config.recall.enabled
        for key in ("notice", "placeholder"):
            value = getattr(entry.rules, key)
            if not on and value is not None and "{handle}" in value:
                where = " for this tool"
                warnings.warn(entry.loc.warning((*entry.path, key), said % where), stacklevel=3)


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
                    f"{key} {int(value):,} tokens is above the context window ({limit:,} tokens)",
                )
            )
            return


# ------------------------------------------------------------------------------ checks


def _specificity(pattern: str) -> tuple[int, int, str]:
    """Exact names first, then globs (the most literal characters first), then ``"*"``
    (and ``"**"``...) last: a glob with no literal character (``"?*"``) tied with ``"*"``
    and lost to it by spelling."""
    wild = sum(pattern.count(c) for c in "*?[")
    rank = 0 if wild == 0 else 2 if not pattern.strip("*") else 1
    return (rank, -len(pattern.replace("*", "").replace("?", "")), pattern)


def _check_raw(
    raw: Mapping[str, Any], loc: Located, path: KeyPath
) -> tuple[Any, list[PolicyError]]:
    """Checks pydantic cannot make, on the raw values (so they run even when the file has
    other errors): JMESPath compiles, templates name known fields, budgets agree."""
    errors: list[PolicyError] = []
    compiled = None
    select = raw.get("select")
    if isinstance(select, str):
        compiled, err = compile_select(select, loc, path)
        if err is not None:
            errors.append(err)
    for key, allowed in (("notice", NOTICE_FIELDS), ("placeholder", PLACEHOLDER_FIELDS)):
        value = raw.get(key)
        if isinstance(value, str):
            problem = template_errors(value, allowed, marks=True)
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
                    f"summary budget {budget:,} is above the tool's max_tokens {cap:,}",
                )
            )
    return compiled, errors


def _check_pattern(pattern: object, loc: Located, path: KeyPath) -> PolicyError | None:
    if not isinstance(pattern, str) or not pattern.strip():
        return loc.error(path, not_a_name(pattern), key=True)
    if pattern.count("[") != pattern.count("]"):
        return loc.error(path, f"invalid glob {excerpt(pattern)}: unbalanced brackets", key=True)
    return None
