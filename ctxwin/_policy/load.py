"""Reading policy files: YAML with every node's line, and errors that point at it.

Loading is ``yaml.safe_load``-safe: a policy file cannot run code. Errors name the file,
the line and the key (:class:`~ctxwin.PolicyError`).
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path
from typing import Any

import yaml
import yaml.composer
import yaml.reader
import yaml.scanner
from pydantic import BaseModel, ValidationError

from ctxwin._exceptions import PolicyError, PolicyWarning
from ctxwin._policy.schema import (
    CROSS_KEY,
    PolicyConfig,
    RepairConfig,
    SummarizeConfig,
    ToolRules,
    WindowConfig,
)
from ctxwin._policy.yamltext import YamlRefusal, excerpt, parse_yaml

__all__ = [
    "YAML_BOOL",
    "Located",
    "not_a_name",
    "policy_files",
    "policy_path",
    "pydantic_errors",
    "read_yaml",
]

KeyPath = tuple[str | int, ...]


class Located:
    """Maps a key path inside one YAML document to its line (and column)."""

    def __init__(self, file: str, node: yaml.Node | None) -> None:
        self.file = file
        self.node = node

    def find(self, path: KeyPath, *, key: bool = False) -> yaml.Node | None:
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

    def line(self, path: KeyPath, *, key: bool = False) -> int | None:
        node = self.find(path, key=key)
        if node is None:
            return None
        line = node.start_mark.line + 1
        if path and not key:  # an alias's value stands where its anchor is: name the key
            key_node = self.find(path, key=True)
            if key_node is not None and key_node.start_mark.line + 1 > line:
                return key_node.start_mark.line + 1
        return line

    def error(
        self,
        path: KeyPath,
        message: str,
        *,
        key: bool = False,
        detail: str | None = None,
        column: int | None = None,
    ) -> PolicyError:
        return PolicyError(message, **self._at(path, key), column=column, detail=detail)

    def cross_key_error(self, path: KeyPath, message: str) -> PolicyError:
        """An error between keys, at the line of the key at ``path``. Its message names the
        keys (``window.target must be below window.trigger``), so it has no ``key``."""
        return PolicyError(message, file=self.file, line=self.line(path))

    def warning(
        self, path: KeyPath, message: str, *, detail: str | None = None, column: int | None = None
    ) -> PolicyWarning:
        return PolicyWarning(message, **self._at(path, False), column=column, detail=detail)

    def _at(self, path: KeyPath, key: bool) -> dict[str, Any]:
        """The file, line and dotted key of ``path``, as a policy error names them."""
        return {
            "file": self.file,
            "line": self.line(path, key=key),
            "key": ".".join(str(p) for p in path) or None,
        }


NOWHERE = Located("<policy>", None)
"""Where a policy given as a dict or object stands (no file, no lines)."""


def read_yaml(path: Path) -> tuple[object, Located]:
    """A YAML file's data and its node map."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise PolicyError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise PolicyError(
            f"not UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start}", file=str(path), line=line
        ) from None
    try:
        data, node = parse_yaml(text)
    except yaml.YAMLError as e:
        raise _yaml_error(e, text, str(path)) from None
    except RecursionError:  # the bounds above should make this unreachable
        raise PolicyError("nested too deeply", file=str(path)) from None
    return data, Located(str(path), node)


def _yaml_error(e: yaml.YAMLError, text: str, file: str) -> PolicyError:
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1
        char = e.character if isinstance(e.character, int) else 0
        return PolicyError(f"character U+{char:04X} is not allowed in YAML", file=file, line=line)
    mark = getattr(e, "problem_mark", None)
    problem = str(getattr(e, "problem", None) or e)
    if len(problem) > 120:  # PyYAML quotes names (an undefined alias) whole
        problem = problem[:117] + "..."
    if not isinstance(e, YamlRefusal):
        problem = f"invalid YAML: {problem}{_glob_hint(e, text)}"
    return PolicyError(problem, file=file, line=mark.line + 1 if mark is not None else None)


_ALIAS_WORD = re.compile(r"\*[^\s'\"&:,\[\]{}]*")
"""A glob read as an alias: ``*`` then what a tool pattern holds, up to a ``:``, blank or
flow indicator (``*``, ``*_search``, ``*search*``)."""


def _glob_hint(e: yaml.YAMLError, text: str) -> str:
    """Why a YAML error is likely an unquoted tool glob (``*: ...``, ``tool: *_x``), or "".

    YAML reads a word that starts with ``*`` as an alias: ``*`` alone (or followed by a
    character an alias name cannot hold) is a scanner error, and ``*_search`` an undefined
    alias; the latter only counts where a tool pattern stands (a key, or ``tool:``'s value).
    """
    if isinstance(e, yaml.scanner.ScannerError) and e.context == "while scanning an alias":
        mark = e.context_mark
    elif isinstance(e, yaml.composer.ComposerError) and str(e.problem).startswith(
        "found undefined alias"
    ):
        mark = e.problem_mark
    else:
        return ""
    if mark is None or not text.startswith("*", mark.index):
        return ""
    word = _ALIAS_WORD.match(text, mark.index)
    pattern = word.group() if word else "*"
    line_start = text.rfind("\n", 0, mark.index) + 1
    before = text[line_start : mark.index].strip()
    after = text[mark.index + len(pattern) :].lstrip(" \t")
    is_scan = isinstance(e, yaml.scanner.ScannerError)
    if not (is_scan or after.startswith(":") or before == "tool:"):
        return ""
    return (
        f' (a word starting with * is a YAML alias: write the tool pattern in quotes: "{pattern}")'
    )


def policy_path(source: object) -> Path:
    """The path of a policy given as a folder or file, or a :class:`PolicyError` naming what
    a policy may be (``load_policy(42)`` is not a path)."""
    if isinstance(source, (str, PathLike)):
        try:
            return Path(source)
        except TypeError:  # a PathLike whose path is bytes
            pass
    raise PolicyError(
        "a policy is a folder or file of YAML (a str or a Path), a dict or a PolicyConfig, "
        f"not {type(source).__name__}"
    )


def policy_files(path: Path, *, follow_symlinks: bool = False) -> list[Path]:
    """The YAML files of a policy folder, or the one file named.

    A file of the folder that is a symbolic link out of it is refused unless
    ``follow_symlinks``: a policy folder cannot make ctxwin read (and quote in its errors)
    files elsewhere. A link to a file inside the folder, or the one path named, is read.
    """
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise PolicyError("no .yaml files in this folder", file=str(path))
        if not follow_symlinks:
            root = path.resolve()
            for p in files:
                if p.is_symlink() and not p.resolve().is_relative_to(root):
                    raise PolicyError(
                        "a symbolic link to a file outside the policy folder (not read; "
                        "load_policy(..., follow_symlinks=True) reads it)",
                        file=str(p),
                    )
        return files
    if not path.exists():
        raise PolicyError("no such file or folder", file=str(path))
    return [path]


YAML_BOOL = "YAML reads an unquoted yes, no, on or off as true or false"
"""Said where a word was expected and YAML gave a boolean."""


def not_a_name(pattern: object) -> str:
    """Why a ``tools:`` key is no tool name: YAML read it as a boolean or a number (quotes
    keep it a name), or it is empty."""
    if isinstance(pattern, bool):
        return (
            f"a tool name or glob must be a string (got {str(pattern).lower()}: {YAML_BOOL}; "
            "write the name in quotes)"
        )
    if isinstance(pattern, (int, float)):
        return (
            f"a tool name or glob must be a string (got the number {pattern!r}: write it in quotes)"
        )
    if not isinstance(pattern, str):
        return f"a tool name or glob must be a string (got {excerpt(pattern)})"
    return "a tool name or glob must be a non-empty string"


_TYPE_WORDS = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def pydantic_errors(e: ValidationError, loc: Located, root: type[BaseModel]) -> list[PolicyError]:
    """pydantic's validation errors as policy errors, each at its line."""
    out = []
    for err in e.errors():
        path = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
        kind = err["type"]
        if (path[:1] == ("tools",) and path[-1:] == ("[key]",)) or (
            path == ("tool",) and kind == "string_type"
        ):
            continue  # a tool name that is no string: the pattern check says why, at its line
        if kind == "extra_forbidden":
            allowed = _keys_at(root, path[:-1])
            msg = f"unknown key {path[-1]!r}"
            if allowed:
                msg += f" (expected one of: {', '.join(allowed)})"
            out.append(loc.error(path, msg, key=True))
        elif kind == "missing":
            out.append(loc.error(path, "required key is missing", key=bool(path)))
        elif kind == CROSS_KEY:
            out.append(
                loc.cross_key_error((*path, *err.get("ctx", {}).get("path", ())), err["msg"])
            )
        else:
            msg = err["msg"].replace("Value error, ", "")
            got = err.get("input")
            if kind == "literal_error":
                msg = msg.replace("Input should be", "must be")
                if isinstance(got, bool):
                    msg += f" (got {str(got).lower()}: {YAML_BOOL})"
            elif kind in _TYPE_WORDS:
                msg = f"must be {_TYPE_WORDS[kind]} (got {excerpt(got)})"
                if kind == "string_type" and isinstance(got, bool):
                    msg = f"must be a string (got {str(got).lower()}: {YAML_BOOL})"
            elif kind in ("greater_than", "greater_than_equal"):
                msg = msg.replace("Input should be", "must be") + f" (got {excerpt(got)})"
            out.append(loc.error(path, msg))
    return out


class _ToolsMap(BaseModel):
    """Marker for the ``tools:`` mapping in error paths (its keys are tool patterns)."""


def _keys_at(model: type[BaseModel], path: KeyPath) -> list[str]:
    """The keys a mapping at ``path`` may hold, for "expected one of" in errors."""
    for part in path:
        if model is PolicyConfig and part == "window":
            model = WindowConfig
        elif model is PolicyConfig and part == "repair":
            model = RepairConfig
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
