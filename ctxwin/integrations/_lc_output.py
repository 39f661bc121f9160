"""The structured-output schema of a LangChain agent's model request, as the model is sent it.

``create_agent(..., response_format=...)`` puts its strategy in each model request
(``request.response_format``), and binds the model after the middleware has run, so the
schema is in none of the request's tools. LangChain binds it as follows (its
``_get_bound_model``), and ctxwin counts it the same way:

- ``ToolStrategy``: one tool per schema (``OutputToolBinding.from_schema_spec``), counted
  as the tools are, through ``convert_to_openai_tool`` as ``bind_tools`` does;
- ``ProviderStrategy``: the request's ``response_format`` (``to_model_kwargs``), counted as
  a Chat body's ``response_format``;
- ``AutoStrategy``, or a bare schema a middleware put in the request: the provider strategy
  for a model LangChain finds has native structured output (its
  ``_supports_provider_strategy``, from the model's profile or name), else the tool
  strategy. Where that helper is missing (another LangChain version), the tool strategy:
  both hold the schema, the tool its description too.

Needs ``langchain`` (the strategies live in ``langchain.agents.structured_output``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxwin._core.memo import Memo
from ctxwin.integrations._lazy import require

__all__ = ["StructuredOutput"]

_NONE: tuple[list[Any], Mapping[str, Any] | None] = ([], None)


class StructuredOutput:
    """The tools and ``response_format`` a request's structured output adds (see the
    module), each strategy's worked out once."""

    def __init__(self) -> None:
        self._so = require("langchain.agents.structured_output", "langchain")
        factory = require("langchain.agents.factory", "langchain")
        self._native = getattr(factory, "_supports_provider_strategy", None)
        self._memo = Memo(1_000)

    def of(self, request: Any) -> tuple[list[Any], Mapping[str, Any] | None]:
        """The tool dicts and the ``response_format`` the model is bound for ``request``."""
        given = getattr(request, "response_format", None)
        if given is None:
            return _NONE
        so = self._so
        strategy = given
        if not isinstance(given, (so.ToolStrategy, so.ProviderStrategy, so.AutoStrategy)):
            strategy = so.AutoStrategy(schema=given)
        native = isinstance(strategy, so.ProviderStrategy) or (
            isinstance(strategy, so.AutoStrategy)
            and self._native is not None
            and bool(self._native(request.model, tools=request.tools))
        )
        hit = self._memo.get(given, int(native))
        if not isinstance(hit, _Bound):
            hit = self._bound(strategy, native)
            self._memo.put(given, hit, int(native))
        return hit.tools, hit.response_format

    def _bound(self, strategy: Any, native: bool) -> _Bound:
        """What LangChain binds the model for ``strategy``; nothing for a schema it cannot
        describe (LangChain refuses it itself, in its own words)."""
        so = self._so
        try:
            if isinstance(strategy, so.AutoStrategy):
                strategy = (so.ProviderStrategy if native else so.ToolStrategy)(strategy.schema)
            if isinstance(strategy, so.ProviderStrategy):
                found = strategy.to_model_kwargs().get("response_format")
                return _Bound([], found if isinstance(found, Mapping) else None)
            convert = require("langchain_core.utils.function_calling", "langchain")
            tools = [so.OutputToolBinding.from_schema_spec(s).tool for s in strategy.schema_specs]
            return _Bound([convert.convert_to_openai_tool(t) for t in tools], None)
        except Exception:  # not ctxwin's to report: the agent raises it itself
            return _Bound([], None)


@dataclass(frozen=True, slots=True)
class _Bound:
    """The tool dicts and the ``response_format`` a strategy binds the model with."""

    tools: list[Any]
    response_format: Mapping[str, Any] | None
