"""Reading a provider's reported usage, whatever shape it comes in.

- Anthropic: ``usage.input_tokens`` (the uncached part), ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``;
- OpenAI Chat: ``usage.prompt_tokens`` (all), ``prompt_tokens_details.cached_tokens``;
- OpenAI Responses: ``usage.input_tokens`` (all), ``input_tokens_details.cached_tokens``
  (and ``cache_write_tokens`` where the model bills writes);
- Gemini: ``usageMetadata.promptTokenCount`` (all), ``cachedContentTokenCount`` (output:
  ``candidatesTokenCount`` + ``thoughtsTokenCount``; ``toolUsePromptTokenCount``, the results
  of the provider's own tools, is no part of the request ctxwin counted);
- the frameworks' own: LangChain's ``usage_metadata`` (``input_tokens``, all, and
  ``input_token_details.cache_read`` / ``cache_creation``; the passes of a server-side tool
  loop from the provider's usage in ``response_metadata``: :func:`passes_beside`) and pydantic-ai's
  ``RequestUsage`` (``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``), the
  OpenAI Agents SDK's ``Usage`` (OpenAI's fields in a dataclass), or the response or
  message that carries it;
- LiteLLM's usage of a Claude model: OpenAI's fields with Anthropic's cache fields beside
  them. ``prompt_tokens`` counts the cache writes since LiteLLM itemizes them
  (``prompt_tokens_details.cache_creation_tokens``); before that it left them out (the
  OpenHands runs of July 2025 record ``prompt_tokens`` = uncached + cache reads, the writes
  on top), and they are added back.

A whole response (dict or SDK object) or its usage part is accepted. Refused, with an
:class:`~ctxwin.InputError` naming the field: a count that is not a whole number of tokens,
details that are not an object, cache reads and writes beyond the input that holds them, and
the total of several requests (``requests`` > 1: pydantic-ai's ``RunUsage``, the Agents
SDK's run ``Usage``), which compared with one request would teach a ratio several times off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import SupportsIndex

from ctxwin._exceptions import InputError
from ctxwin.formats._objects import TooDeep, Unreadable, plain

__all__ = ["Usage", "passes_beside", "read_usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """A request's input as the provider counted it.

    ``input_tokens`` counts all of it (cached included); ``cached_tokens`` what was read
    from the prompt cache; ``cache_write_tokens`` what was written to it (0 where the
    provider does not say). ``output_tokens`` counts all the model generated, its reasoning
    included (as OpenAI and Anthropic count it; Gemini's ``candidatesTokenCount`` plus its
    ``thoughtsTokenCount``).
    """

    input_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    request_tokens: int | None = None
    """The input of the request as it was sent, where the counts above sum several sampling
    passes: an Anthropic turn that ran a server-side tool loop (``web_search``,
    ``code_execution``...) reports the passes summed, each pass reading the request plus what
    the tools added; its ``iterations`` list them, and the first ``message`` entry is the
    request. 0: summed, the passes not listed. None: the counts are of the request alone.
    Calibration compares this with ctxwin's count, never the sum."""


_COUNTS = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")
"""The counts every :class:`Usage` holds, in order."""

MAX_TOKENS = 10**12
"""More tokens than any request holds: a larger count is a corrupt one."""


def _count(value: object, path: str) -> int:
    """A token count as the provider reported it: an int (numpy's integers too, or a float
    that is one, as a proxy may send), 0 or more; else an InputError naming the field."""
    count: object = value
    if isinstance(value, float) and value.is_integer():
        count = int(value)
    elif isinstance(value, SupportsIndex) and not isinstance(value, bool | int):
        with contextlib.suppress(TypeError):  # an array of numpy's that is not one integer
            count = operator.index(value)
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_TOKENS:
        return count
    raise InputError(
        f"a token count must be a whole number from 0 to {MAX_TOKENS:,}, not "
        f"{value!r:.40} ({type(value).__name__})",
        path=path,
    )


class _Fields:
    """A usage mapping and where it sits (``usage``, ``usage.prompt_tokens_details``), so
    that a bad count is named by its field."""

    def __init__(self, data: Mapping[str, object], at: str) -> None:
        self.data, self.at = data, at

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def get(self, key: str) -> object:
        return self.data.get(key)


def _int(data: _Fields, *keys: str) -> int:
    """The first of ``keys`` the usage gives (None counts as not given), else 0."""
    for key in keys:
        value = data.get(key)
        if value is not None:
            return _count(value, f"{data.at}.{key}")
    return 0


def _details(data: _Fields, key: str) -> _Fields:
    """The details object under ``key`` (absent or null: none); anything but an object
    there is an InputError, not a detail silently read as 0."""
    value = data.get(key)
    path = f"{data.at}.{key}"
    found = _mapping(value) if value is not None else {}
    if found is None:
        raise InputError(f"must be an object, not {type(value).__name__}", path=path)
    return _Fields(found, path)


def read_usage(usage: object) -> Usage:
    """The :class:`Usage` of a response or of its usage object (see the module). A count
    that is not a whole number of tokens, 0 or more, is an :class:`~ctxwin.InputError`
    whose ``path`` names the field."""
    if isinstance(usage, Usage):
        counts = [_count(getattr(usage, f), f"Usage.{f}") for f in _COUNTS]
        sent = usage.request_tokens
        sent = None if sent is None else _count(sent, "Usage.request_tokens")
        input_, cached, written, output = counts
        return _consistent(Usage(input_, cached, written, output, sent), "Usage")
    found = _mapping(usage)
    if found is None:
        raise InputError(f"usage must be a response or its usage, not {type(usage).__name__}")
    data = _Fields(found, "usage")
    for key in ("usage", "usageMetadata", "usage_metadata"):
        inner = _mapping(data.get(key))
        if inner is not None:
            data = _Fields(inner, key)
            break
    _one_request(data)
    read = _read(data)
    passes = _first_pass(data)
    if passes is None and data.data is not found:  # a response, or a framework's message
        passes = passes_beside(found.get("response_metadata"), found.get("content"))
    return _consistent(
        read if passes is None else dataclasses.replace(read, request_tokens=passes), data.at
    )


_SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Anthropic's blocks of a call its server runs (web search, web fetch, code execution, an
MCP connector's tool): the model samples again on the result, in the same request."""


def passes_beside(metadata: object, content: object) -> int | None:
    """:attr:`Usage.request_tokens` of a response or a framework's message, read beside the
    usage counts: from the provider's own usage a LangChain message keeps in
    ``response_metadata["usage"]`` (ChatAnthropic's, with ``server_tool_use`` and
    ``iterations``, which ``usage_metadata`` leaves out), else 0 when ``content`` holds a
    call the provider's server ran (Anthropic's ``server_tool_use``, ``mcp_tool_use``;
    LangChain's ``server_tool_call`` of an Anthropic model): its passes are summed, not
    listed (a streamed ChatAnthropic message keeps no raw usage). None when neither says."""
    meta = _mapping(metadata) if metadata is not None else None
    raw = _mapping(meta.get("usage")) if meta is not None and meta.get("usage") else None
    if raw is not None:
        passes = _first_pass(_Fields(raw, "response_metadata.usage"))
        if passes is not None:
            return passes
    calls = set(_SERVER_CALLS)
    if meta is not None and meta.get("model_provider") == "anthropic":
        calls.add("server_tool_call")  # LangChain's standard block (output_version="v1")
    if isinstance(content, list | tuple):
        for block in content:
            found = _mapping(block) if not isinstance(block, str) else None
            if found is not None and found.get("type") in calls:
                return 0
    return None


def _first_pass(data: _Fields) -> int | None:
    """:attr:`Usage.request_tokens` of an Anthropic usage (or LiteLLM's of a Claude model,
    which keeps its fields): its first ``message`` iteration's input, when it lists its
    sampling passes; 0 when a server tool ran (``server_tool_use`` counts a request) and the
    passes are not listed, or a pass before the first ``message`` one compacted the context
    (that pass then reads the compacted context, not the request); None otherwise (anthropic
    SDK, ``BetaUsage.iterations``: "token accumulation across server-side tool use loops")."""
    iterations = data.get("iterations")
    if isinstance(iterations, list | tuple):
        for i, item in enumerate(iterations):
            entry = _mapping(item)
            if entry is not None and entry.get("type") == "compaction":
                return 0
            if entry is not None and entry.get("type") == "message":
                fields = _Fields(entry, f"{data.at}.iterations[{i}]")
                keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
                return sum(_int(fields, key) for key in keys)
    tools = _mapping(data.get("server_tool_use"))
    if tools is None:
        return None
    used = _Fields(tools, f"{data.at}.server_tool_use")
    return 0 if any(_int(used, key) for key in used if key.endswith("_requests")) else None


def _one_request(data: _Fields) -> None:
    """Refuse the total of several requests (pydantic-ai's ``RunUsage``, the OpenAI Agents
    SDK's ``Usage``: ``requests`` > 1): compared with one request, it would teach the
    policy a ratio several times too large."""
    requests = data.get("requests")
    if requests is None or isinstance(requests, bool):
        return
    n = _count(requests, f"{data.at}.requests")
    if n > 1:
        raise InputError(
            f"this usage sums {n} requests (an agent run's total): pass the usage of the one "
            "request the Result is for (pydantic-ai: the ModelResponse's usage; the OpenAI "
            "Agents SDK: usage.request_usage_entries[-1] or the raw response's usage)",
            path=f"{data.at}.requests",
        )


def _consistent(usage: Usage, at: str) -> Usage:
    """``usage``, unless its cache reads and writes exceed its input (which counts them)."""
    if usage.cached_tokens + usage.cache_write_tokens > usage.input_tokens:
        raise InputError(
            f"{usage.cached_tokens:,} tokens read from the cache and {usage.cache_write_tokens:,} "
            f"written to it, of {usage.input_tokens:,} input tokens in all: not a usage a "
            "provider reports",
            path=at,
        )
    return usage


def _read(data: _Fields) -> Usage:
    """The Usage of a usage mapping, by the fields that tell its provider."""
    if "prompt_tokens" in data:
        return _openai_chat(data)
    if "cache_read_input_tokens" in data or "cache_creation_input_tokens" in data:
        read = _int(data, "cache_read_input_tokens")
        write = _int(data, "cache_creation_input_tokens")
        return Usage(
            _int(data, "input_tokens") + read + write, read, write, _int(data, "output_tokens")
        )
    if "promptTokenCount" in data or "prompt_token_count" in data:
        return Usage(
            _int(data, "promptTokenCount", "prompt_token_count"),
            _int(data, "cachedContentTokenCount", "cached_content_token_count"),
            0,
            _int(data, "candidatesTokenCount", "candidates_token_count")
            + _int(data, "thoughtsTokenCount", "thoughts_token_count"),
        )
    if "input_tokens" in data:
        details = _details(data, "input_tokens_details")
        framework = _details(data, "input_token_details")  # LangChain's usage_metadata
        return Usage(
            _int(data, "input_tokens"),
            _int(details, "cached_tokens")
            or _int(framework, "cache_read")
            or _int(data, "cache_read_tokens"),
            _int(details, "cache_write_tokens")
            or _int(data, "cache_write_tokens")
            or _int(framework, "cache_creation"),
            _int(data, "output_tokens"),
        )
    raise InputError(
        "cannot read this usage: expected Anthropic (input_tokens, cache_read_input_tokens), "
        "OpenAI (prompt_tokens or input_tokens) or Gemini (promptTokenCount) fields, found "
        f"keys {sorted(str(k) for k in data)[:8]}"
    )


def _mapping(value: object) -> Mapping[str, object] | None:
    """``value`` as a mapping: a dict, an SDK object's dump, a dataclass's fields (pydantic-ai
    and the OpenAI Agents SDK keep their usage in dataclasses, the latter with the OpenAI
    SDK's details objects in them); None for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):  # read as it is: a count of numpy's is a count
        return value
    try:
        data = plain(value)
    except (Unreadable, TooDeep):
        return None
    return data if isinstance(data, Mapping) else None


def _openai_chat(data: _Fields) -> Usage:
    """OpenAI Chat's usage, and LiteLLM's, which has that shape for every provider (for a
    Claude model with Anthropic's cache fields beside; see the module)."""
    details = _details(data, "prompt_tokens_details")
    read = _int(details, "cached_tokens") or _int(data, "cache_read_input_tokens")
    write = _int(details, "cache_write_tokens", "cache_creation_tokens") or _int(
        data, "cache_write_tokens", "cache_creation_input_tokens"
    )
    total = _int(data, "prompt_tokens")
    itemized = "cache_creation_tokens" in details or "cache_write_tokens" in details
    if "cache_creation_input_tokens" in data and not itemized:
        total += _int(data, "cache_creation_input_tokens")  # left out of prompt_tokens
    # as read: cache reads and writes beyond the total are refused by _consistent, not
    # hidden by raising the total to them (calibration learned a ratio of 3 from one)
    return Usage(total, read, write, _int(data, "completion_tokens"))
