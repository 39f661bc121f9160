"""Policies: the schema (``schema.py``), reading YAML (``load.py``), compiling (``compile.py``)."""

from ctxwin._policy.compile import CompiledPolicy, CompiledTool, PolicySource, compile_policy
from ctxwin._policy.schema import (
    PolicyConfig,
    SummarizeConfig,
    ToolFile,
    ToolRules,
    WindowConfig,
    json_schema,
)

__all__ = [
    "CompiledPolicy",
    "CompiledTool",
    "PolicyConfig",
    "PolicySource",
    "SummarizeConfig",
    "ToolFile",
    "ToolRules",
    "WindowConfig",
    "compile_policy",
    "json_schema",
]
