"""The data tables a policy refers to: pricing presets and model profiles.

Both are YAML files shipped with ctxwin (``ctxwin/data/pricing.yaml``, ``models.yaml``),
with their sources in comments; they are read once, validated, and never fetched.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ctxwin._policy.yamltext import excerpt

__all__ = [
    "ModelProfile",
    "Pricing",
    "binds_thinking",
    "model_profile",
    "pricing_presets",
    "profile_of",
    "unknown_preset",
]


class Pricing(BaseModel):
    """What tokens cost, relative to one plain (uncached) input token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cache_write: float = Field(ge=0, description="A token written to the prompt cache.")
    cache_read: float = Field(ge=0, description="A token read from the prompt cache.")
    min_prefix: int = Field(
        0, ge=0, description="The shortest prefix the provider caches (tokens); below it, none."
    )


class ModelProfile(BaseModel):
    """What ctxwin knows of a model (see ``models.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int = Field(gt=0)
    tokenizer: str
    pricing: str
    breakpoints: int = Field(ge=0)
    breakpoint: Literal["anthropic", "openai", "none"]
    min_prefix: int = Field(ge=0)
    reasoning_context: Literal["current_turn", "all_turns"] = "current_turn"
    """Which reasoning items a request's later turns carry that the model reads by default
    (OpenAI Responses, ``reasoning.context`` left out or ``auto``): ``all_turns``, or only
    those since the user's latest message (the others are dropped before reading)."""
    thinking_binding: Literal["none", "prefix"] = "none"
    """``prefix``: the model runs Anthropic's prefix check on the thinking blocks a request
    sends back (preserved thinking): a block whose prefix (system, tools, every block before
    it) differs from what was sent when it was produced is invalid, and so is every later
    one (a 400, or dropped, as the request asks)."""


def _load(name: str) -> dict[str, object]:
    text = (resources.files("ctxwin") / "data" / name).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict), name
    return data


@functools.cache
def pricing_presets() -> dict[str, Pricing]:
    """Every pricing preset by name."""
    return {str(k): Pricing.model_validate(v) for k, v in _load("pricing.yaml").items()}


def unknown_preset(name: str, *, auto: bool = False) -> str | None:
    """What is wrong with a pricing preset's name (``None``: there is such a preset;
    ``auto``: the policy's ``auto`` is one too)."""
    presets = pricing_presets()
    if name in presets or (auto and name == "auto"):
        return None
    known = ", ".join([*presets, *(["auto"] if auto else [])])
    return f"unknown pricing preset {excerpt(name)} (expected one of: {known})"


@functools.cache
def _profiles() -> tuple[tuple[str, ModelProfile], ...]:
    items = [(str(k), ModelProfile.model_validate(v)) for k, v in _load("models.yaml").items()]
    presets = pricing_presets()
    for name, profile in items:
        assert profile.pricing in presets, f"models.yaml: {name}: unknown pricing"
    return tuple(sorted(items, key=lambda kv: -len(kv[0])))


def model_profile(model: str | None) -> tuple[str, ModelProfile] | None:
    """The profile of a model name (the longest matching prefix), with that prefix."""
    if not model:
        return None
    low = model.lower().removeprefix("models/")
    for prefix, profile in _profiles():
        if low.startswith(prefix):
            return prefix, profile
    return None


_ROUTE = re.compile(r"^[a-z][a-z-]*:(?=.)")
"""A provider named before the model (pydantic-ai's ``openai:gpt-4o``, OpenAI's ``ft:``)."""
_VENDOR = re.compile(r"^(?:[a-z][a-z-]*\.)+")
"""Bedrock's region and vendor (``us.anthropic.claude-...``); a version's dot follows a digit."""


@functools.lru_cache(maxsize=256)
def profile_of(model: str | None) -> tuple[str, ModelProfile] | None:
    """The profile of a model name, also when a router or cloud names it its own way:
    ``openai/gpt-4o``, ``openrouter/anthropic/claude-sonnet-4.5`` (LiteLLM, OpenRouter),
    ``anthropic:claude-sonnet-4-5`` (pydantic-ai), ``bedrock/us.anthropic.claude-...``,
    ``publishers/google/models/gemini-2.5-pro`` (Vertex AI). pydantic-ai's ``FallbackModel``
    (``fallback:gpt-4o,gpt-4``) has the profile of its model with the smallest window: any
    of them may get the request."""
    if not model:
        return None
    if model.startswith("fallback:") and "," in model:  # pydantic-ai's FallbackModel
        each = [p for m in model.removeprefix("fallback:").split(",") if (p := profile_of(m))]
        return min(each, key=lambda p: p[1].context_window) if each else None
    name = model.lower().rsplit("/", 1)[-1]
    name = _VENDOR.sub("", _ROUTE.sub("", name, count=1), count=1)
    if name.startswith("claude-"):  # OpenRouter's claude-opus-4.5: Anthropic's claude-opus-4-5
        name = name.replace(".", "-")
    found = model_profile(name) if name != model.lower() else None
    return found if found is not None else model_profile(model)


def binds_thinking(model: str | None) -> bool:
    """Whether the model runs the prefix check on thinking blocks sent back
    (``thinking_binding: prefix``; a FallbackModel's, when any of its models does)."""
    if model and model.startswith("fallback:") and "," in model:
        return any(binds_thinking(m) for m in model.removeprefix("fallback:").split(","))
    found = profile_of(model)
    return found is not None and found[1].thinking_binding == "prefix"
