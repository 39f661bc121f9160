"""Policy files: schema, loading, validation — all up front, so a policy that loads runs.

A policy is a folder of YAML files (or one file, or a dict): one defaults file (any file
without a top-level ``tool:`` key, conventionally ``defaults.yaml``) and one file per tool
(with ``tool:``, a name or a glob). Loading is ``yaml.safe_load``-safe: a policy file cannot
run code. Every error names the file, the line, the key and, for a JMESPath expression, the
column with a caret; all errors of a load are reported together (:class:`PolicyErrors`).
"""

from __future__ import annotations

import fnmatch
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import jmespath
import yaml
from jmespath.exceptions import JMESPathError, ParseError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ctxwin._exceptions import PolicyError, PolicyErrors

PLACEHOLDER_FIELDS = frozenset({"tool", "call_id", "tokens"})
NOTICE_FIELDS = frozenset({"tool", "call_id", "omitted_tokens", "total_tokens", "kept_tokens"})
DEFAULT_PLACEHOLDER = (
    "[{tool} result cleared to save context ({tokens} tokens). Call {tool} again if you need it.]"
)
DEFAULT_NOTICE = "[... {omitted_tokens} of {total_tokens} tokens of {tool} output truncated ...]"

PositiveInt = Annotated[int, Field(gt=0)]
MIN_CAP = 24
"""The smallest cap: a truncation notice itself takes about 15 tokens."""
Fraction = Annotated[float, Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WindowConfig(_Model):
    """When and how far old tool results are cleared (the sliding window)."""

    trigger: float = Field(
        0.6,
        gt=0,
        description="Start clearing above this: a fraction of context_window (<= 1) or tokens.",
    )
    target: float = Field(
        0.4,
        gt=0,
        description="Then clear down to this in one go (hysteresis): a fraction or tokens.",
    )
    keep_rounds: int = Field(
        2, ge=1, description="The newest rounds (assistant turn + its results) never cleared."
    )
    placeholder: str = Field(
        DEFAULT_PLACEHOLDER,
        description="Text of a cleared result. Fields: {tool}, {call_id}, {tokens}.",
    )
    clear_tool_inputs: bool = Field(
        False, description="Also shorten the arguments of the calls whose results are cleared."
    )
    clear_reasoning: bool = Field(
        False,
        description="Also drop the reasoning items (OpenAI Responses) of rounds the window "
        "clears, oldest first like results; skipped when the round's calls carry item ids.",
    )

    def tokens(self, value: float, context_window: int) -> int:
        return int(value * context_window) if value <= 1 else int(value)


class SummarizeConfig(_Model):
    """Summarize a result through the user's summarizer when it is long."""

    over_tokens: PositiveInt = Field(description="Summarize results longer than this.")
    max_tokens: PositiveInt = Field(description="The summary's budget, passed to the summarizer.")
    instructions: str = Field("", description="Passed to the summarizer as is.")
    timeout: float = Field(
        30.0, gt=0, description="Seconds to wait for a summary before falling back to the cap."
    )


class ToolRules(_Model):
    """What to do with one tool's results (a tool file without its ``tool:`` key)."""

    select: str | None = Field(
        None, description="JMESPath over the result parsed as JSON; keeps only what it selects."
    )
    max_tokens: int | None = Field(
        None,
        ge=MIN_CAP,
        description=f"Cap results at this many tokens, notice included (at least {MIN_CAP}).",
    )
    truncate: Literal["head", "tail", "head_tail"] = Field(
        "head_tail", description="Which part of a capped result to keep."
    )
    notice: str = Field(
        DEFAULT_NOTICE,
        description=(
            "Truncation notice. Fields: {tool}, {call_id}, {omitted_tokens}, {total_tokens}, "
            "{kept_tokens}."
        ),
    )
    summarize: SummarizeConfig | None = Field(
        None, description="Summarize long results through the summarizer you pass to the policy."
    )
    placeholder: str | None = Field(
        None, description="This tool's placeholder when the window clears a result."
    )
    window: Literal["clear", "keep"] = Field(
        "clear", description="'keep': the window never clears this tool's results."
    )
    edit_latest: bool = Field(
        True,
        description="Apply select/summarize/cap to the latest round too (false: send it raw).",
    )


class ToolFile(ToolRules):
    """A per-tool policy file."""

    tool: str = Field(description="The tool's name, or a glob such as 'search_*'.")


class PolicyConfig(_Model):
    """The defaults file (or a whole policy in one file/dict)."""

    context_window: PositiveInt = Field(128_000, description="Tokens the model accepts.")
    tokenizer: str = Field(
        "o200k_base",
        description="A tiktoken encoding (o200k_base, cl100k_base), 'approx', or a counter "
        "name passed to load_policy(counters=...).",
    )
    window: WindowConfig = Field(default_factory=WindowConfig)
    overflow: Literal["drop_oldest_rounds", "error"] = Field(
        "drop_oldest_rounds",
        description="Still over context_window after the window: drop whole rounds from the "
        "oldest, or raise BudgetExceeded.",
    )
    tools: dict[str, ToolRules] = Field(
        default_factory=dict,
        description="Tool rules by name or glob; '*' applies to any tool without its own rules.",
    )

    @model_validator(mode="after")
    def _target_below_trigger(self) -> PolicyConfig:
        w = self.window
        if w.tokens(w.target, self.context_window) >= w.tokens(w.trigger, self.context_window):
            raise ValueError("window.target must be below window.trigger")
        return self


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a policy file: a defaults file or a tool file."""
    defaults = PolicyConfig.model_json_schema()
    tool = ToolFile.model_json_schema()
    defs = {**defaults.pop("$defs", {}), **tool.pop("$defs", {})}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ctxwin policy file",
        "anyOf": [defaults, tool],
        "$defs": defs,
    }


# ------------------------------------------------------------------------------ compiled


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

    def rules_for(self, tool: str) -> CompiledTool | None:
        for t in self.tools:
            if t.pattern == tool or fnmatch.fnmatchcase(tool, t.pattern):
                return t
        return None


def _specificity(pattern: str) -> tuple[int, int, str]:
    wild = sum(pattern.count(c) for c in "*?[")
    return (0 if wild == 0 else 1, -len(pattern.replace("*", "").replace("?", "")), pattern)


# ------------------------------------------------------------------------------ loading


class _Located:
    """Maps a key path inside one YAML document to its line (and column)."""

    def __init__(self, file: str, node: yaml.Node | None) -> None:
        self.file = file
        self.node = node

    def find(self, path: tuple[str | int, ...], *, key: bool = False) -> yaml.Node | None:
        node = self.node
        for i, part in enumerate(path):
            if not isinstance(node, yaml.MappingNode):
                return node
            for k, v in node.value:
                if k.value == part:
                    node = k if key and i == len(path) - 1 else v
                    break
            else:
                return node
        return node

    def line(self, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
        node = self.find(path, key=key)
        return node.start_mark.line + 1 if node is not None else None

    def error(
        self,
        path: tuple[str | int, ...],
        message: str,
        *,
        key: bool = False,
        detail: str | None = None,
        column: int | None = None,
    ) -> PolicyError:
        return PolicyError(
            message,
            file=self.file,
            line=self.line(path, key=key),
            key=".".join(str(p) for p in path) or None,
            column=column,
            detail=detail,
        )


def _read_yaml(path: Path) -> tuple[object, _Located]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        raise PolicyError(
            f"invalid YAML: {problem}",
            file=str(path),
            line=mark.line + 1 if mark is not None else None,
        ) from None
    return data, _Located(str(path), node)


def _pydantic_errors(e: ValidationError, loc: _Located, root: type[BaseModel]) -> list[PolicyError]:
    out = []
    for err in e.errors():
        path = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _keys_at(root, path[:-1])
            msg = f"unknown key {path[-1]!r}"
            if allowed:
                msg += f" (expected one of: {', '.join(allowed)})"
            out.append(loc.error(path, msg, key=True))
        elif kind == "missing":
            out.append(loc.error(path, "required key is missing", key=bool(path)))
        else:
            msg = err["msg"].replace("Value error, ", "")
            got = err.get("input")
            if kind == "literal_error":
                msg = msg.replace("Input should be", "must be")
            elif kind in _TYPE_WORDS:
                msg = f"must be {_TYPE_WORDS[kind]} (got {got!r})"
            elif kind in ("greater_than", "greater_than_equal"):
                msg = msg.replace("Input should be", "must be") + f" (got {got!r})"
            out.append(loc.error(path, msg))
    return out


_TYPE_WORDS = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _keys_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """The keys a mapping at ``path`` may hold, for "expected one of" in errors."""
    for part in path:
        if model is PolicyConfig and part == "window":
            model = WindowConfig
        elif model is PolicyConfig and part == "tools":
            model = _ToolsMap
        elif model is _ToolsMap:
            model = ToolRules
        elif issubclass(model, ToolRules) and part == "summarize":
            model = SummarizeConfig
        else:
            return []
    if model is _ToolsMap:
        return []
    return sorted(model.model_fields)


class _ToolsMap(BaseModel):
    """Marker for the ``tools:`` mapping in error paths (its keys are tool patterns)."""


def _template_errors(text: str, allowed: frozenset[str]) -> str | None:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        return f"invalid template: {e}"
    for f in fields:
        name = f.split(".")[0].split("[")[0]
        if name not in allowed:
            names = ", ".join("{" + a + "}" for a in sorted(allowed))
            return f"unknown template field {{{f}}} (allowed: {names})"
    return None


def _compile_select(
    expr: str, loc: _Located, path: tuple[str | int, ...]
) -> tuple[Any, PolicyError | None]:
    try:
        return jmespath.compile(expr), None
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
        caret = f"    {expr}\n    {' ' * ((col or 1) - 1)}^"
        where = f" at column {col}" if col is not None else ""
        return None, loc.error(
            (*path, "select"), f"invalid JMESPath{where}: {reason}", detail=caret, column=col
        )


def _check_raw(
    raw: Mapping[str, Any], loc: _Located, path: tuple[str | int, ...]
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


def _check_pattern(
    pattern: object, loc: _Located, path: tuple[str | int, ...]
) -> PolicyError | None:
    if not isinstance(pattern, str) or not pattern.strip():
        return loc.error(path, "a tool name or glob must be a non-empty string")
    if pattern.count("[") != pattern.count("]"):
        return loc.error(path, f"invalid glob {pattern!r}: unbalanced brackets")
    return None


def _policy_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise PolicyError("no .yaml files in this folder", file=str(path))
        return files
    if not path.exists():
        raise PolicyError("no such file or folder", file=str(path))
    return [path]


def compile_policy(source: str | Path | Mapping[str, Any] | PolicyConfig) -> CompiledPolicy:
    """Load, validate and compile a policy from a folder, a file, a dict or a config object."""
    errors: list[PolicyError] = []
    config: PolicyConfig | None = None
    config_loc = _Located("<policy>", None)
    config_raw: Mapping[str, Any] = {}
    # (pattern, rules or None if invalid, raw rules, where errors point, key path, label)
    entries: list[
        tuple[object, ToolRules | None, Mapping[str, Any], _Located, tuple[str | int, ...], str]
    ] = []
    sources: list[str] = []

    if isinstance(source, PolicyConfig):
        config = source
        config_raw = source.model_dump()
    elif isinstance(source, Mapping):
        config_raw = source
        try:
            config = PolicyConfig.model_validate(source)
        except ValidationError as e:
            errors.extend(_pydantic_errors(e, config_loc, PolicyConfig))
    else:
        for file in _policy_files(Path(source)):
            sources.append(str(file))
            try:
                data, loc = _read_yaml(file)
            except PolicyError as e:
                errors.append(e)
                continue
            data = {} if data is None else data
            if not isinstance(data, Mapping):
                errors.append(
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
                    errors.extend(_pydantic_errors(e, loc, ToolFile))
                entries.append((data["tool"], rules, data, loc, (), str(file)))
            elif config_loc.file != "<policy>":
                errors.append(
                    PolicyError(
                        f"a second defaults file (the first is {config_loc.file}); "
                        "give per-tool files a 'tool:' key",
                        file=str(file),
                        line=1,
                    )
                )
            else:
                config_loc, config_raw = loc, data
                try:
                    config = PolicyConfig.model_validate(data)
                except ValidationError as e:
                    errors.extend(_pydantic_errors(e, loc, PolicyConfig))
        if config is None and config_loc.file == "<policy>":
            config = PolicyConfig()
    raw_tools = config_raw.get("tools")
    if isinstance(raw_tools, Mapping):
        for pattern, raw in raw_tools.items():
            if isinstance(raw, Mapping):
                rules = config.tools.get(pattern) if config is not None else None
                label = f"{config_loc.file}: tools.{pattern}"
                entries.append((pattern, rules, raw, config_loc, ("tools", pattern), label))
    window = config_raw.get("window")
    if isinstance(window, Mapping) and isinstance(window.get("placeholder"), str):
        problem = _template_errors(window["placeholder"], PLACEHOLDER_FIELDS)
        if problem:
            errors.append(config_loc.error(("window", "placeholder"), problem))

    compiled: list[CompiledTool] = []
    seen: dict[str, str] = {}
    for pattern, rules, raw, loc, path, label in entries:
        at = path or ("tool",)
        perr = _check_pattern(pattern, loc, at)
        if perr is not None:
            errors.append(perr)
            continue
        assert isinstance(pattern, str)
        if pattern in seen:
            errors.append(loc.error(at, f"tool {pattern!r} already has rules in {seen[pattern]}"))
            continue
        seen[pattern] = label
        expr, errs = _check_raw(raw, loc, path)
        errors.extend(errs)
        if rules is not None:
            compiled.append(CompiledTool(pattern, rules, expr, label))
    if errors:
        errors.sort(key=lambda e: (e.file or "", e.line or 0))
        raise errors[0] if len(errors) == 1 else PolicyErrors(errors)
    assert config is not None
    compiled.sort(key=lambda t: _specificity(t.pattern))
    return CompiledPolicy(config=config, tools=tuple(compiled), sources=tuple(sources))
