"""What names a summarizer in the keys of the summaries a store shares: workers agree on
the name of the same summarizer (on other machines too: no path, no ``id()``), and
summarizers that write other summaries have other names."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json

__all__ = ["summarizer_name"]

_ASKED = ("prompt", "max_tokens", "options", "limit_param", "input")
"""What a ready summarizer's backend asks with, besides its model."""


def summarizer_name(summarizer: object) -> str:
    """What names a summarizer in the shared summaries' keys, so that workers sharing a
    store share only what the same summarizer wrote:

    - the library's own (sync and async alike): the provider, the model and a digest of
      how it asks (prompt, limit, options; for LangChain, the settings of what the chain
      is made of);
    - a function: its module and qualified name, with the line it starts on for a lambda
      or a function defined in another (two lambdas of one module are both ``<lambda>``);
      a ``functools.partial``'s are those of the function it wraps (its arguments are
      settings, as a closure's are: they share);
    - an object with ``__call__``: its class's, with its ``name`` attribute where it has
      one (a ``str``), else its ``model`` (a ``str``); instances of one class with neither
      share their summaries.
    """
    while isinstance(summarizer, functools.partial):
        summarizer = summarizer.func
    backend = getattr(summarizer, "backend", None)
    provider = getattr(backend, "provider", None)
    if isinstance(provider, str):  # and how it asks: two prompts write two summaries
        how = [getattr(backend, k, None) for k in _ASKED]
        runnable = getattr(backend, "runnable", None)
        how.append(type(runnable).__qualname__ if runnable is not None else None)
        settings = getattr(backend, "settings", None)
        if settings is not None:  # what a LangChain chain is made of
            how.append(settings)
        text = json.dumps(how, sort_keys=True, default=repr)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{provider}:{getattr(backend, 'model', None) or ''}:{digest}"
    if callable(summarizer) and hasattr(summarizer, "__qualname__"):  # a function, a method
        return _qualified(summarizer, summarizer)
    kind = type(summarizer)
    for label in ("name", "model"):
        name = getattr(summarizer, label, None)
        if isinstance(name, str) and name:
            return f"{_qualified(kind, None)}:{name}"
    return _qualified(kind, getattr(kind, "__call__", None))  # noqa: B004 - its method


def _qualified(named: object, code_of: object) -> str:
    """``named``'s module and qualified name; where that does not tell it apart in its
    module (a lambda, a function or class defined in a function), with the first line of
    ``code_of`` (a class: its ``__call__``)."""
    module = getattr(named, "__module__", None) or ""
    qualname = str(getattr(named, "__qualname__", None) or repr(named))
    if "<" not in qualname or code_of is None:  # <lambda>, <locals>
        return f"{module}.{qualname}"
    try:
        code = getattr(inspect.unwrap(code_of), "__code__", None)  # type: ignore[arg-type]
    except ValueError:  # a __wrapped__ cycle
        code = None
    line = getattr(code, "co_firstlineno", None)
    return f"{module}.{qualname}" if not isinstance(line, int) else f"{module}.{qualname}:{line}"
