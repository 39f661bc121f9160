"""Reading policy files: YAML with every node's line, and errors that point at it.

Loading is ``yaml.safe_load``-safe: a policy file cannot run code. Errors name the file,
the line and the key (:class:`~ctxwin.PolicyError`).
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
import warnings
from os import PathLike
from pathlib import Path
from typing import Any

import yaml
import yaml.composer
import yaml.reader
import yaml.scanner
from pydantic import BaseModel, ValidationError

from ctxwin._exceptions import PolicyError, PolicyWarning
from ctxwin._policy.schema import CROSS_KEY
from ctxwin._policy.sections import PRICING_TYPE
from ctxwin._policy.yamlerrors import refuse_odd_breaks, yaml_error
from ctxwin._policy.yamltext import excerpt, parse_yaml

__all__ = [
    "YAML_BOOL",
    "Located",
    "is_policy_file",
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
        """The node at ``path`` (or the deepest one on its way). A key that a merge
        (``<<: *base``) gave a mapping twice is the one whose value was used: the last, as
        PyYAML builds the mapping, which lists the merged pairs before its own."""
        node = self.node
        for i, part in enumerate(path):
            if not isinstance(node, yaml.MappingNode):
                return node
            for k, v in reversed(node.value):
                if _is_key(k, part):
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
        """An error between keys, at the line of the key at ``path``, which is its ``key``.
        Its message names the keys (``window.target must be below window.trigger``), so its
        text does not name the key again."""
        error = PolicyError(message, file=self.file, line=self.line(path))
        error.key = self._at(path, True)["key"]
        return error

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


def _is_key(node: yaml.Node, part: str | int) -> bool:
    """Whether a mapping's key node is the key ``part`` as read: a string by its text, any
    other value (``3``, ``yes``) as YAML reads it."""
    if isinstance(part, str):
        return bool(node.tag == _STR and node.value == part)
    if not isinstance(node, yaml.ScalarNode) or node.tag == _STR:
        return False
    try:
        value = yaml.SafeLoader("").construct_object(node)
    except yaml.YAMLError:
        return False
    return bool(value == part)


_STR = "tag:yaml.org,2002:str"

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
    refuse_odd_breaks(text, str(path))
    try:
        data, node = parse_yaml(text)
    except yaml.YAMLError as e:
        raise yaml_error(e, text, str(path)) from None
    except RecursionError:  # the bounds above should make this unreachable
        raise PolicyError("nested too deeply", file=str(path)) from None
    return data, Located(str(path), node)


def policy_path(source: object) -> Path:
    """The path of a policy given as a folder or file, or a :class:`PolicyError` naming what
    a policy may be (``load_policy(42)`` is not a path)."""
    if isinstance(source, (str, PathLike)):
        if source == "":  # Path("") is the working directory: an unset variable, not "."
            raise PolicyError("the policy path is empty (write '.' for this folder)")
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
    What the file system refuses (a name too long, a folder that cannot be listed) is a
    :class:`PolicyError` with its reason; YAML text given for the path, one saying so.
    """
    try:
        if path.is_dir():
            return _folder_files(path, follow_symlinks)
        found = path.exists()
    except OSError as e:
        hint = _yaml_text(path)
        if hint is not None:
            raise hint from None
        where = e.filename if isinstance(e.filename, str) else str(path)
        raise PolicyError(f"cannot read: {e.strerror or e}", file=where) from None
    if not found:
        raise _yaml_text(path) or PolicyError("no such file or folder", file=str(path))
    return [path]


def _yaml_text(path: Path) -> PolicyError | None:
    """The error for YAML text passed where a policy's path goes (a line break in it, or a
    ``key: value`` at its start), else None."""
    text = str(path)
    if "\n" not in text and not re.match(r"[\w-]+:\s", text):
        return None
    return PolicyError(
        f"YAML text, not a path ({text[:40]!r}{'...' if len(text) > 40 else ''}): load_policy "
        "takes a folder, a file or a dict; for YAML text pass yaml.safe_load(text)"
    )


def _folder_files(path: Path, follow_symlinks: bool) -> list[Path]:
    """The policy files of the folder ``path`` (see :func:`policy_files`)."""
    named = sorted(p for p in path.iterdir() if is_policy_file(p))
    for p in named:
        if p.is_symlink() and not p.exists():  # its tool's rules would silently vanish
            raise PolicyError(_broken_link(p), file=str(p))
    files = [p for p in named if p.is_file()]  # not a folder named x.yaml
    _warn_of_subfolders(path)
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


def is_policy_file(path: Path) -> bool:
    """Whether a folder's entry is named as a policy file: ``.yaml`` or ``.yml`` (any case),
    not hidden (an editor's or macOS's ``._name.yaml`` beside the real one is no policy
    file)."""
    return path.suffix.lower() in (".yaml", ".yml") and not path.name.startswith(".")


def _broken_link(path: Path) -> str:
    """Why a policy file that is a symbolic link to nothing is refused (a file moved or
    deleted, a mount gone stale): skipped, the rules it held would be missing unsaid."""
    try:
        target = f" to {os.readlink(path)}"
    except OSError:
        target = ""
    return (
        f"a symbolic link{target}, which leads to no file: the rules it held would be "
        "missing (fix or remove the link)"
    )


def _warn_of_subfolders(path: Path) -> None:
    """Warn of a subfolder holding YAML files: a policy folder is flat, so its rules are not
    read (hidden folders, such as a Kubernetes volume's ``..data``, are passed over)."""
    for sub in sorted(path.iterdir()):
        if sub.name.startswith(".") or not sub.is_dir():
            continue
        try:
            held = any(is_policy_file(p) for p in sub.iterdir())
        except OSError:
            continue
        if held:
            warnings.warn(
                PolicyWarning(
                    "a subfolder is not read: a policy folder holds its files directly",
                    file=str(sub),
                ),
                stacklevel=4,
            )


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
        path = _untag(tuple(p for p in err["loc"] if isinstance(p, (str, int))))
        kind = err["type"]
        if (path[:1] == ("tools",) and path[-1:] == ("[key]",)) or (
            path == ("tool",) and kind == "string_type"
        ):
            continue  # a tool name that is no string: the pattern check says why, at its line
        if kind in ("extra_forbidden", "invalid_key"):
            out.append(_unknown_key(root, path, err.get("input"), loc, kind))
        elif kind == "missing":
            out.append(loc.error(path, "required key is missing", key=bool(path)))
        elif kind == CROSS_KEY:
            out.append(
                loc.cross_key_error((*path, *err.get("ctx", {}).get("path", ())), err["msg"])
            )
        else:
            out.append(loc.error(path, _message(err)))
    return out


def _message(err: Any) -> str:
    """What a value error says, in the policy's words, with the value it got."""
    kind, got = err["type"], err.get("input")
    msg = str(err["msg"]).replace("Value error, ", "")
    if kind == "literal_error":
        msg = msg.replace("Input should be", "must be")
        if isinstance(got, bool):
            msg += f" (got {str(got).lower()}: {YAML_BOOL})"
    elif kind in _TYPE_WORDS:
        msg = f"must be {_TYPE_WORDS[kind]} (got {excerpt(got)})"
        if kind == "string_type" and isinstance(got, bool):
            msg = f"must be a string (got {str(got).lower()}: {YAML_BOOL})"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        msg = msg.replace("Input should be", "must be") + f" (got {excerpt(got)})"
    elif kind == PRICING_TYPE:
        shown = f"{str(got).lower()}: {YAML_BOOL}" if isinstance(got, bool) else excerpt(got)
        msg += f" (got {shown})"
    return msg


_UNION_TAGS = {"pricing": ("preset", "custom")}
"""The tags of a key's union in pydantic's error paths (``pricing.custom.cache_read``),
which name no key of the file."""


def _untag(path: KeyPath) -> KeyPath:
    """An error path without the union tags pydantic puts in it."""
    for i in range(len(path) - 1):
        tags = _UNION_TAGS.get(str(path[i]))
        if tags is not None and path[i + 1] in tags:
            return (*path[: i + 1], *path[i + 2 :])
    return path


def _unknown_key(
    root: type[BaseModel], path: KeyPath, got: object, loc: Located, kind: str
) -> PolicyError:
    """An unknown key (or one YAML read as no string: ``1:``, ``yes:``), with the keys
    allowed there and the nearest of them."""
    allowed = _keys_at(root, path[:-1])
    name = got if kind == "invalid_key" else path[-1]
    if isinstance(name, bool):
        msg = f"unknown key {str(name).lower()} ({YAML_BOOL}; write it in quotes)"
    else:
        msg = f"unknown key {excerpt(name)}"
    if allowed:
        msg += f" (expected one of: {', '.join(allowed)})"
        near = difflib.get_close_matches(str(name), allowed, n=1)
        nested = _nested_homes(root, str(name)) if len(path) == 1 else []
        if nested:
            msg += f"; it is a key of {' or '.join(nested)}"
        elif near:
            msg += f"; did you mean {near[0]!r}?"
    at = path if kind == "extra_forbidden" else (*path[:-1], got)
    return loc.error(at, msg, key=True)  # type: ignore[arg-type]  # got: a YAML scalar


def _nested_homes(root: type[BaseModel], name: str) -> list[str]:
    """Where a key unknown at the top of a file belongs one level down (``keep_rounds``:
    ``window:``; ``max_tokens``: a tool's rules, ``recall:``)."""
    homes = []
    for key, field in root.model_fields.items():
        if typing.get_origin(field.annotation) is dict:
            model, key = _model_in(typing.get_args(field.annotation)[1]), f"a tool's rules ({key}:)"
        else:
            model, key = _model_in(field.annotation), f"{key}:"
        if model is not None and name in model.model_fields:
            homes.append(key)
    return homes


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The model a field holds (``WindowConfig``, or ``PricingConfig`` in ``pricing``'s
    union), or ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (
        typing.Union,
        typing.Annotated,
    ):
        for arg in args:
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _keys_at(model: type[BaseModel], path: KeyPath) -> list[str]:
    """The keys a mapping at ``path`` may hold, for "expected one of" in errors."""
    current: type[BaseModel] | None = model
    parts = list(path)
    while parts and current is not None:
        part = parts.pop(0)
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        if typing.get_origin(field.annotation) is dict:  # tools: name -> rules
            if not parts:
                return []
            parts.pop(0)
            current = _model_in(typing.get_args(field.annotation)[1])
        else:
            current = _model_in(field.annotation)
    return sorted(current.model_fields) if current is not None else []
