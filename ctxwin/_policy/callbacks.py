"""Checking the callbacks a policy is given (its summarizer and token counters) when it
loads: a summarizer or counter that cannot be called is a :class:`~ctxwin.PolicyError`
then, naming the argument, not a failure at the first request that needs it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

from ctxwin._exceptions import PolicyError
from ctxwin._policy.yamltext import excerpt
from ctxwin.tokens.counters import is_counter_spec, not_a_counter

__all__ = ["check_callbacks"]

SUMMARIZER = (
    "a callable summarizer(text, *, tool, call_id, max_tokens, instructions) -> str (sync or async)"
)


def check_callbacks(
    *,
    summarizer: object = None,
    counter: object = None,
    counters: object = None,
    model_counters: object = None,
) -> None:
    """Raise :class:`~ctxwin.PolicyError` for a summarizer that is not callable, or a
    counter (``counter``, a value of ``counters`` or ``model_counters``) that is not one."""
    if summarizer is not None and not callable(summarizer):
        raise PolicyError(f"must be {SUMMARIZER}, not {_kind(summarizer)}", key="summarizer")
    if summarizer is not None:
        _check_signature(summarizer)
    if counter is not None and not is_counter_spec(counter):
        raise PolicyError(not_a_counter(counter), key="counter")
    for name, given in (("counters", counters), ("model_counters", model_counters)):
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise PolicyError(f"must be a dict of name -> counter, not {_kind(given)}", key=name)
        for key, value in given.items():
            if not isinstance(key, str):
                raise PolicyError(f"a name must be a string, not {excerpt(key)}", key=name)
            if not is_counter_spec(value):
                raise PolicyError(not_a_counter(value), key=f"{name}.{key:.40}")


def _check_signature(summarizer: Callable[..., object]) -> None:
    """A :class:`~ctxwin.PolicyError` for a summarizer that cannot take the call ctxwin
    makes (a text and the keywords of :data:`SUMMARIZER`): every summary would fail with a
    ``TypeError``, each remembered as a fallback for the policy's lifetime. A callable
    whose signature Python cannot read (some builtins) is taken as it is."""
    try:
        signature = inspect.signature(summarizer)
    except (TypeError, ValueError):
        return
    try:
        signature.bind("text", tool="t", call_id="c", max_tokens=1, instructions="")
    except TypeError as e:
        if _takes_the_call(summarizer):  # a decorator's wrapper, not the function it wraps
            return
        name = getattr(summarizer, "__qualname__", None) or type(summarizer).__name__
        bare = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
        shown = signature.replace(parameters=bare, return_annotation=signature.empty)
        wrapped = (
            " (the signature of what functools.wraps says it wraps: a wrapper that supplies "
            "arguments itself names its own parameters)"
            if hasattr(summarizer, "__wrapped__")
            else ""
        )
        raise PolicyError(
            f"{name}{shown} cannot be called as summarizer(text, *, tool, call_id, "
            f"max_tokens, instructions) ({e}); take those keywords, or **kwargs for those "
            f"you do not use{wrapped}",
            key="summarizer",
        ) from None


def _takes_the_call(summarizer: Callable[..., object]) -> bool:
    """Whether the signature of ``summarizer`` itself, not of what ``functools.wraps`` says
    it wraps, names ctxwin's call (a decorator's wrapper with parameters of its own). A
    wrapper of ``*args, **kwargs`` takes any call: what it wraps is judged."""
    try:
        own = inspect.signature(summarizer, follow_wrapped=False)
        own.bind("text", tool="t", call_id="c", max_tokens=1, instructions="")
    except (TypeError, ValueError):
        return False
    generic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return any(p.kind not in generic for p in own.parameters.values())


def _kind(value: object) -> str:
    """What a value is, for an error: its type, and the value when short (``int 42``)."""
    shown = excerpt(value, 30)
    name = type(value).__name__
    return f"{name} {shown}" if not shown.startswith("<") else name
