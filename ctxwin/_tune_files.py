"""Where the settings ``ctxwin tune`` varies live (:mod:`ctxwin.tune`): the policy's tool
files beside its ``defaults.yaml``, the file of its defaults, and the whole policy as one
source for each candidate."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ctxwin._engine import Policy

__all__ = ["defaults_path", "tool_files", "with_tool_files", "written_rules"]


def tool_files(policy: Policy) -> dict[str, dict[str, Any]]:
    """The rules of the policy's tool files (one file per tool, beside ``defaults.yaml``),
    by tool pattern: the config (``defaults.yaml``) the search varies does not hold them."""
    own = policy.config.tools
    return {
        t.pattern: t.rules.model_dump(mode="json", exclude_defaults=True)
        for t in policy.compiled.tools
        if t.pattern not in own and t.source != "<recall>"  # the built-in recall rules
    }


def defaults_path(policy: Policy) -> str | None:
    """The file of the policy's defaults: for a folder of tool files only, the
    ``defaults.yaml`` to write there (:meth:`TuneResult.diff` says it is new); None for a
    dict, and for one tool file loaded alone (even alone in its folder): a file beside it is
    not read with it (the diff showed the settings of one there as ``{}``)."""
    sources = set(policy.compiled.sources)
    found = sources - {t.source for t in policy.compiled.tools}
    if len(found) == 1:
        return found.pop()
    folder = policy.compiled.folder
    return os.path.join(folder, "defaults.yaml") if folder is not None and not found else None


def written_rules(path: str, rules: dict[str, Any]) -> dict[str, Any]:
    """The rules tool file ``path`` writes, as written (a setting at its default value
    included: the diff's current side must hold it, or a tuned value of it comes out as a
    line added beside it); ``rules`` (its compiled rules) when it cannot be read so."""
    try:
        found = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return rules
    if not isinstance(found, dict):
        return rules
    return {k: v for k, v in found.items() if k != "tool"}


def with_tool_files(
    config: Mapping[str, Any], files: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    """``config`` with the tool files' rules in its ``tools:``: the whole policy, as one
    source. A setting the search gave a tool file's pattern (``"*"``) overrides the file's."""
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(dict(config)))  # a deep copy
    if files:
        tools = data.setdefault("tools", {})
        for pattern, rules in files.items():
            tools[pattern] = {**rules, **tools.get(pattern, {})}
    return data
