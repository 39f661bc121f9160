"""The limits of one request: the policy's numbers for the request's model, calibrated."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ctxwin._core.conversation import Conversation
from ctxwin._policy.schema import PolicyConfig, PricingConfig, WindowConfig
from ctxwin._policy.tables import Pricing, pricing_presets, profile_of
from ctxwin.formats._base import Adapter
from ctxwin.formats._lc_chat import claude_media_tokens, media_tokens
from ctxwin.formats._openai_images import claude_part_tokens, openai_part_tokens
from ctxwin.formats._tool_prompt import claude_bound, claude_rules, claude_thinking, tool_prompt
from ctxwin.steps._base import Limits
from ctxwin.tokens._meter import Overheads

__all__ = [
    "DEFAULT_WINDOW",
    "for_model",
    "limits_for",
    "overheads_for",
    "profile_of",
    "provider_side",
    "resolve_pricing",
]

DEFAULT_WINDOW = 128_000
"""The context window of ``context_window: auto`` when the model is not known."""


def resolve_pricing(config: PolicyConfig, model: str | None) -> Pricing:
    """The pricing a policy means for a model (``auto``: the model's preset, else
    ``anthropic``: the dearest cache writes of the common presets), its ``min_prefix`` at
    least the model's own (:func:`for_model`)."""
    pricing = config.pricing
    if isinstance(pricing, PricingConfig):
        return for_model(Pricing(**pricing.model_dump()), model)
    presets = pricing_presets()
    if pricing == "auto":
        found = profile_of(model)
        return for_model(presets[found[1].pricing if found is not None else "anthropic"], model)
    return for_model(presets[pricing], model)


def for_model(pricing: Pricing, model: str | None) -> Pricing:
    """``pricing`` on ``model``: the provider caches no prefix shorter than the model's
    minimum (``min_prefix`` in ``models.yaml``: 4,096 on claude-haiku-4-5, where the
    ``anthropic`` preset says 1,024), whatever the prices."""
    found = profile_of(model)
    if found is None or found[1].min_prefix <= pricing.min_prefix:
        return pricing
    return pricing.model_copy(update={"min_prefix": found[1].min_prefix})


def limits_for(
    config: PolicyConfig,
    model: str | None,
    format: str,
    schedule: list[tuple[int, float]],
) -> tuple[tuple[tuple[int, Limits], ...], list[str]]:
    """The limits by message position (one entry per calibration ratio), and notes for the
    report (an unknown model under ``context_window: auto``)."""
    notes: list[str] = []
    found = profile_of(model)
    window = config.context_window
    if not isinstance(window, int):
        if found is None:
            notes.append(
                f"context_window: auto, but the model {model!r} has no profile: "
                f"{DEFAULT_WINDOW:,} tokens assumed"
            )
            window = DEFAULT_WINDOW
        else:
            window = found[1].context_window
    pricing = resolve_pricing(config, model)
    if found is not None:
        kind, count = found[1].breakpoint, found[1].breakpoints
    elif format == "anthropic":
        kind, count = "anthropic", 4
    else:
        kind, count = "none", 0
    w = config.window
    trigger, target = w.ceiling(window)
    drop_target = w.drop_tokens(window)
    if max(trigger, target, drop_target) > window:  # tokens above an auto window's size
        notes.append(_above_window(config, model, window))
        trigger, target, drop_target = _into(w, window, trigger, target, drop_target)
    min_prefix = pricing.min_prefix  # the model's own at least (for_model)
    out = []
    for position, ratio in schedule:
        out.append(
            (
                position,
                Limits(
                    context_window=int(window / ratio),
                    trigger=int(trigger / ratio),
                    target=int(target / ratio),
                    drop_target=int(drop_target / ratio),
                    cache_write=pricing.cache_write,
                    cache_read=pricing.cache_read,
                    min_prefix=int(min_prefix / ratio),
                    breakpoints=count,
                    breakpoint=kind,
                    ratio=ratio,
                    model=model,
                    provider_window=window,
                ),
            )
        )
    return tuple(out), notes


def _into(w: WindowConfig, window: int, *tokens: int) -> tuple[int, int, int]:
    """Trigger, target and drop target within ``window``: those given in tokens scaled as
    the trigger is to the window's size when it is above (so that the band stays a band:
    at the window's size each, the ceiling cleared at almost every request), any still
    above it at its size, a target that would reach the trigger below it."""
    trigger, target, drop_target = tokens
    given = [(v := getattr(w, key)) is not None and v > 1 for key in _CEILINGS]
    scale = window / trigger if trigger > window and given[0] else 1.0
    trigger, target, drop_target = (
        min(int(v * scale) if g else v, window) for v, g in zip(tokens, given, strict=True)
    )
    if target >= trigger:
        target = trigger * 3 // 4
    return trigger, target, min(drop_target, target)


_CEILINGS = ("trigger", "target", "drop_target")


def _above_window(config: PolicyConfig, model: str | None, window: int) -> str:
    """The note of ``window.trigger``, ``target`` or ``drop_target`` given in tokens above
    the window ``context_window: auto`` found for ``model`` (a window given in tokens
    refuses them when the policy loads): each is taken at the window's size, so that the
    ceiling still clears, and overflow still drops, what a request holds beyond it. The
    trigger is taken at the window's size, the target and ``drop_target`` scaled as it is
    (at the window's size alike, the ceiling cleared at almost every request)."""
    w = config.window
    over = [
        f"window.{key} {int(value):,}"
        for key in _CEILINGS
        if (value := getattr(w, key)) is not None and value > 1 and value > window
    ]
    return (
        f"{', '.join(over)} tokens above the context window of {model!r} ({window:,} tokens, "
        "context_window: auto): scaled into it"
    )


_FOR_CLAUDE: dict[Callable[[object], int | None], Callable[[object], int | None]] = {
    openai_part_tokens: claude_part_tokens,
    media_tokens: claude_media_tokens,
}
"""A format's media counts (:attr:`Overheads.images`), and the same for a Claude model."""


def overheads_for(adapter: Adapter, body: object, model: str | None) -> Overheads:
    """The format's overheads for one request: where the format drops earlier turns'
    reasoning (OpenAI Responses), not when the request's ``reasoning.context`` says
    ``all_turns``, or leaves it to a model that reads them all (``gpt-5.6``), nor for a
    Claude model (the Agents SDK on ``LitellmModel``, LiteLLM's bridge send them back as
    thinking, counted as an Anthropic body's is). A Chat or Responses body bound for Claude
    counts its images and PDFs as Claude bills them (:func:`claude_part_tokens`), and so do
    LangChain messages for a Claude model (:func:`claude_media_tokens`)."""
    overheads = adapter.overheads
    claude = _FOR_CLAUDE.get(overheads.images) if overheads.images is not None else None
    if claude is not None and claude_bound(adapter.name, model):
        overheads = dataclasses.replace(overheads, images=claude)
    if not overheads.drops_earlier_reasoning:
        return overheads
    reads = adapter.reads_earlier_reasoning(body)
    if reads is None and claude_bound(adapter.name, model):
        reads = True  # a Claude model gets them as thinking, as an Anthropic body sends it
    if reads is None:
        found = profile_of(model)
        reads = found is not None and found[1].reasoning_context == "all_turns"
    return dataclasses.replace(overheads, drops_earlier_reasoning=False) if reads else overheads


def provider_side(conv: Conversation, body: object, model: str | None) -> Conversation:
    """``conv`` with what the provider adds to the request on its own
    (:attr:`~ctxwin.Conversation.provider_prompt`): Anthropic's tool-use system prompt, for
    a Claude model (an Anthropic body, or an OpenAI Chat or Responses one: LiteLLM's, the
    Agents SDK's on LitellmModel: :func:`claude_bound`); and with the rules it holds the
    request to (:func:`claude_rules`: call ids unique in the request; a Responses body's
    reasoning items as Claude's thinking: :func:`claude_thinking`)."""
    conv = claude_thinking(claude_rules(conv, model), model)
    added = tool_prompt(body) if claude_bound(conv.format, model) else 0
    return (
        conv if added == conv.provider_prompt else dataclasses.replace(conv, provider_prompt=added)
    )
