"""Where LiteLLM sends a request, as far as ctxwin's edit of it depends on that: the model
whose profile ctxwin takes, and whether the ``cache_control`` of its chat messages' parts
become the breakpoints of the request LiteLLM sends (for the LiteLLM hook).

In-process, and at ``async_pre_call_deployment_hook``, the request's keys are the call's:
on the proxy, the ``litellm_params`` of the deployment the Router chose (``model:
anthropic/claude-sonnet-4-5``, ``custom_llm_provider``, ``api_base``, ``base_model``) and its
``model_info`` (litellm 1.110.2 ``utils.async_pre_call_deployment_hook``, run by
``client``'s ``wrapper_async`` on the kwargs the Router passes to ``litellm.acompletion``,
with ``metadata.model_group`` naming the group). Before that, at ``async_pre_call_hook``,
the proxy's request names only the model group the client asked for (``model: my-claude``):
its route is the one its deployments were seen to have (:class:`Groups`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxwin._feedback.limits import profile_of
from ctxwin._policy.tables import binds_thinking
from ctxwin.formats._tool_prompt import claude_bound
from ctxwin.integrations._lazy import require

__all__ = ["Groups", "Route", "endpoint", "name_of", "route_of"]

_EXTRA = "litellm"
_GROUPS = 256


@dataclass(frozen=True, slots=True)
class Route:
    """The model whose profile ctxwin takes (named without LiteLLM's provider) and whether
    LiteLLM turns the ``cache_control`` of chat parts into the breakpoints of the request it
    sends (:func:`endpoint`; asked under ``cache_breakpoints: auto`` only)."""

    model: str | None
    anthropic: bool = False
    thinking: bool = False
    """Whether LiteLLM sends the ``thinking_blocks`` of chat messages on as Claude's thinking
    blocks (an Anthropic or Bedrock request for a Claude model, or an OpenAI-compatible
    proxy's, which forwards them): with thinking on, they
    must open the turn's first assistant message, and on a model that checks their prefix
    (preserved thinking) the window removes those its changes invalidate
    (:mod:`ctxwin.formats._chat_thinking`)."""

    def of(self, chat: bool) -> Route:
        """The route as an edit sees it: only chat messages take ``cache_control`` and
        carry ``thinking_blocks``."""
        return self if chat or not (self.anthropic or self.thinking) else Route(self.model)


def name_of(model: object) -> str | None:
    """A LiteLLM model as ctxwin names it: ``anthropic/claude-sonnet-4-5`` is the model
    ``claude-sonnet-4-5`` of a provider."""
    return model.rsplit("/", 1)[-1] if isinstance(model, str) and model else None


def route_of(data: Mapping[str, Any], auto: bool) -> Route:
    """The route of a request about to go: its model is the deployment's ``base_model`` (of
    its ``litellm_params`` or its ``model_info``) when ctxwin has a profile for it, else its
    ``model`` (an Azure deployment name, a Bedrock ARN have none), whose provider says where
    its chat goes (``auto``: the policy places breakpoints)."""
    info, model = data.get("model_info"), data.get("model")
    given = (data.get("base_model"), info.get("base_model") if isinstance(info, Mapping) else None)
    name = next((n for v in given if (n := name_of(v)) and profile_of(n)), None)
    name = name or name_of(model)
    claude = _claude(name)
    if not (auto or claude) or not isinstance(model, str):
        return Route(name)
    provider, base = data.get("custom_llm_provider"), data.get("api_base")
    provider = provider if isinstance(provider, str) else None
    served = endpoint(model, provider, base if isinstance(base, str) else None)
    # an OpenAI-compatible proxy (litellm_proxy/, openai/ with an api_base) forwards the
    # thinking_blocks to Claude too: kept, an extra opener is harmless where it does not
    thinking = claude and (
        served in ("anthropic", "bedrock") or _forwards_thinking(model, provider)
    )
    return Route(name, auto and served is not None, thinking)


_DROPS_THINKING = frozenset({"hosted_vllm"})
"""LiteLLM providers that do not send a chat's ``thinking_blocks`` on (a hosted vLLM)."""


def _forwards_thinking(model: str, provider: str | None) -> bool:
    """Whether LiteLLM sends a chat's ``thinking_blocks`` on to the endpoint of ``model``:
    anything but :data:`_DROPS_THINKING`."""
    return (provider or model.split("/", 1)[0]) not in _DROPS_THINKING


def _claude(name: str | None) -> bool:
    """Whether ``name`` is a Claude model, whose chat LiteLLM may send on with its
    ``thinking_blocks`` as Claude's thinking (:attr:`Route.thinking`)."""
    return claude_bound("openai-chat", name) or binds_thinking(name)


_SIGNS_IN = frozenset({"github_copilot"})
"""Providers whose LiteLLM configuration starts a login (a device code, over the network)
when built, as ``get_llm_provider`` builds it: an OpenAI Chat endpoint (no breakpoints),
which ctxwin knows by its name."""


@functools.lru_cache(maxsize=256)
def endpoint(
    model: str, provider: str | None, api_base: str | None
) -> Literal["anthropic", "bedrock", "openrouter"] | None:
    """Whether LiteLLM sends a chat request for ``model`` where the ``cache_control`` of its
    parts become breakpoints: its chat configuration builds an Anthropic request (Anthropic,
    Bedrock Invoke, Vertex AI, Azure AI: an ``AnthropicConfig``), or it goes to Bedrock
    (Converse: a ``cachePoint`` each) or OpenRouter (which takes them for Claude). That is
    LiteLLM's own test (litellm 1.110.2 ``anthropic_cache_control_hook``:
    ``_translates_prompt_cache_breakpoint``, ``_builds_anthropic_messages``), OpenRouter
    added. An OpenAI-compatible endpoint (``openai/claude-...``, a hosted vLLM, Databricks,
    which drops them) is none of these: None. Otherwise the kind of request LiteLLM builds:
    ``anthropic`` (an ``AnthropicConfig``), ``bedrock`` (Converse or Invoke) or
    ``openrouter`` (OpenAI Chat)."""
    if (provider or model.split("/", 1)[0]) in _SIGNS_IN:
        return None  # resolving it builds its configuration, which logs in
    litellm = require("litellm", _EXTRA)
    exceptions = require("litellm.exceptions", _EXTRA)
    try:
        served, name, _, _ = litellm.get_llm_provider(
            model=model, custom_llm_provider=provider, api_base=api_base
        )
        if name in ("bedrock", "openrouter"):
            return "bedrock" if name == "bedrock" else "openrouter"
        providers = require("litellm.types.utils", _EXTRA).LlmProviders
        configs = require("litellm.utils", _EXTRA).ProviderConfigManager
        config = configs.get_provider_chat_config(model=served, provider=providers(name))
    except (exceptions.BadRequestError, ValueError):
        return None  # a model LiteLLM cannot route: it sends nothing
    anthropic = require("litellm.llms.anthropic.chat.transformation", _EXTRA).AnthropicConfig
    openai = require("litellm.llms.openai.chat.gpt_transformation", _EXTRA).OpenAIGPTConfig
    ok = isinstance(config, anthropic) and not isinstance(config, openai)
    return "anthropic" if ok else None


class Groups:
    """The route of each model group's deployments, as the deployment hook saw them (the
    first :data:`_GROUPS` groups; a group whose deployments differ has none)."""

    def __init__(self) -> None:
        self._routes: dict[str, Route | None] = {}

    def learn(self, kwargs: Mapping[str, Any], route: Route) -> None:
        """Note the route of a deployment's request (its ``metadata.model_group``)."""
        group = None
        for key in ("metadata", "litellm_metadata"):  # the latter on /v1/responses, messages
            meta = kwargs.get(key)
            group = group or (meta.get("model_group") if isinstance(meta, Mapping) else None)
        if not isinstance(group, str):
            return
        routes = self._routes
        if group not in routes:
            if len(routes) < _GROUPS:
                routes[group] = route
        elif routes[group] != route:
            routes[group] = None  # different models: each deployment edits for its own

    def before_routing(self, data: Mapping[str, Any], auto: bool, chat: bool) -> Route | None:
        """The route of a proxy request before the Router picks its deployment: its group's
        (the request's ``model``), else that of the model it names when ctxwin has a profile
        for it, else None. With ``auto`` (a chat request, the policy placing breakpoints), a
        group named for a model with Anthropic's breakpoints is None until a deployment is
        seen: whether its chat goes where ``cache_control`` counts only the deployment says
        (an edit made before would be made again there); so is a ``chat`` request for a
        Claude model (whether LiteLLM sends its ``thinking_blocks`` as Claude's, which open
        the turn, only the deployment says)."""
        model = data.get("model")
        if isinstance(model, str) and model in self._routes:
            return self._routes[model]
        name = name_of(model)
        found = profile_of(name) if name else None
        if found is None or (auto and found[1].breakpoint == "anthropic"):
            return None
        if chat and _claude(name):
            return None
        return Route(name)
