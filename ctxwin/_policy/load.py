"""Reading policy files: YAML with every node's line, and errors that point at it.

Loading is ``yaml.safe_load``-safe: a policy file cannot run code. Errors name the file,
the line and the key (:class:`~ctxwin.PolicyError`).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from ctxwin._exceptions import PolicyError
from ctxwin._policy.schema import (
    PolicyConfig,
    RepairConfig,
    SummarizeConfig,
    ToolRules,
    WindowConfig,
)

__all__ = ["Located", "policy_files", "pydantic_errors", "read_yaml"]

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
        return node.start_mark.line + 1 if node is not None else None

    def error(
        self,
        path: KeyPath,
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


NOWHERE = Located("<policy>", None)
"""Where a policy given as a dict or object stands (no file, no lines)."""


def read_yaml(path: Path) -> tuple[object, Located]:
    """A YAML file's data and its node map."""
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
    return data, Located(str(path), node)


def policy_files(path: Path) -> list[Path]:
    """The YAML files of a policy folder, or the one file named."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise PolicyError("no .yaml files in this folder", file=str(path))
        return files
    if not path.exists():
        raise PolicyError("no such file or folder", file=str(path))
    return [path]


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


def pydantic_errors(e: ValidationError, loc: Located, root: type[BaseModel]) -> list[PolicyError]:
    """pydantic's validation errors as policy errors, each at its line."""
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
