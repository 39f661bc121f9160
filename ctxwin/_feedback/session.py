"""A session: one conversation's requests, what ctxwin predicted and what the provider said.

``session = policy.session()`` applies requests as the policy does (``session.apply``) and
takes each response's usage (``session.observe(result, usage)``); request by request it
holds predicted against reported input tokens and cache reads, and the cost under the
policy's pricing. It renders as a report does. When the provider's cache hits fall well
below what ctxwin expected, it says so: that is how a user learns that a breakpoint, a TTL
or a reordering broke the cache.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxwin._core.snapshot import Fingerprints
from ctxwin._feedback.usage import read_usage
from ctxwin._report.tables import Col, fmt_num, md_table, text_table

if TYPE_CHECKING:
    from ctxwin._engine import Policy
    from ctxwin._result import Result

__all__ = ["CACHE_SHORTFALL", "RequestRecord", "Session"]

CACHE_SHORTFALL = 0.5
"""Reported cache reads under this share of the predicted ones are called out."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request: predicted by ctxwin (in the provider's tokens, calibrated) and reported."""

    predicted_input: int
    predicted_cached: int
    reported_input: int | None = None
    reported_cached: int | None = None
    reported_writes: int | None = None
    envelope_changed: bool = False
    """Its system prompt, tools or model differ from the request before: the provider's
    cache keys start with them, so it reads nothing from the cache."""

    def cost(self, write: float, read: float, *, reported: bool) -> float | None:
        """The input's cost in plain input tokens. Predicted: every token not read from the
        cache is written to it (the window ends the prefix it keeps at the last message).
        Reported: as billed, plain tokens at 1, the reported writes at ``write`` (a provider
        that reports none, none)."""
        if reported:
            if self.reported_input is None:
                return None
            cached = self.reported_cached or 0
            writes = self.reported_writes or 0
            return (self.reported_input - cached - writes) + write * writes + read * cached
        return write * (self.predicted_input - self.predicted_cached) + read * self.predicted_cached


def _frozen(value: object) -> str:
    """``value`` as text: what it was at this request, whatever its caller changes in it
    later (a tool list appended to in place, a parameter renamed). Compared by value (a
    tool list built afresh for each request, ``"default": 0.7`` in it, is the same one), in
    the order of its keys, as the provider reads the request it caches."""
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _snapshot(value: object) -> Any:
    """``value`` as it is now, its mappings and lists as tuples (their strings and numbers
    the same objects): a message edited in place later is not the one recorded. Unlike
    :func:`_frozen`, it costs nothing per character, and compared with the next request's,
    an unchanged text is the same object (the system prompt is often long)."""
    if isinstance(value, Mapping):
        return tuple((k, _snapshot(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(_snapshot(v) for v in value)
    return value


def _system_lead(result: Result, kept: tuple[int, ...]) -> int:
    """How many of the messages the provider reads open the request as its system prompt
    (OpenAI Chat's system and developer messages, a Responses input's): part of what its
    cache keys start with, like a system prompt kept apart from the messages (Anthropic's
    ``system``, Responses' ``instructions``), which :meth:`Adapter.envelope` holds."""
    messages = result.conversation.messages
    lead = 0
    for k in kept:
        if messages[k].role != "system":
            break
        lead += 1
    return lead


@dataclass
class Session:
    """Requests of one conversation under one policy (see the module)."""

    policy: Policy
    records: list[RequestRecord] = field(default_factory=list)
    model: str | None = None
    """The model of the session's requests (from the first one that names it)."""
    _previous: list[object] | None = field(default=None, repr=False, compare=False)
    _envelope: str = field(default="", repr=False, compare=False)
    _prints: Fingerprints = field(default_factory=Fingerprints, repr=False, compare=False)
    """Snapshots of what the request before sent (see :mod:`ctxwin._core.snapshot`): a
    message the user changed in place since, down to a call's nested arguments, is the same
    object in both requests, and equal to itself."""
    _lead: tuple[object, ...] = field(default=(), repr=False, compare=False)
    """The system prompt the request before opened its messages with (:func:`_snapshot`)."""
    _pending: weakref.WeakKeyDictionary[Result, int] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False, compare=False
    )
    """The record of each result not observed yet: by the result itself (an id would
    outlive it, and name a later result that is not the session's)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def apply(self, request: object, **kwargs: Any) -> Result:
        """``policy.apply(request, ...)``, recorded with the cache reads ctxwin expects: the
        prefix shared with the previous request of the session (when it is long enough for
        the provider to cache it)."""
        result = self.policy.apply(request, **kwargs)
        self._record(result)
        return result

    async def aapply(self, request: object, **kwargs: Any) -> Result:
        """Like :meth:`apply`, with ``policy.aapply``."""
        result = await self.policy.aapply(request, **kwargs)
        self._record(result)
        return result

    def _record(self, result: Result) -> None:
        with self._lock:  # requests applied from several threads: one record each, in turn
            self._record_locked(result)

    def _record_locked(self, result: Result) -> None:
        adapter = self.policy.adapter_of(result)
        every = adapter.items_of(result.request)
        kept = result.read_positions  # the provider's cache compares what it reads
        messages = result.conversation.messages
        items = [adapter.unmarked(every[k], messages[k].cache) for k in kept]
        limits = result.limits
        self.model = self.model or result.model
        envelope = _frozen((result.model, adapter.envelope(result.request)))
        lead = _snapshot(items[: _system_lead(result, kept)])
        changed = self._previous is not None and (envelope != self._envelope or lead != self._lead)
        shared = self._unchanged(items)
        if changed:
            shared = 0
        cached = result.prefix_tokens(kept[shared - 1] + 1) if shared else 0
        if cached < limits.min_prefix:
            cached = 0
        ratio = self.policy.calibration.of(result.model).estimate
        self._pending[result] = len(self.records)
        predicted = round(result.tokens * ratio), round(cached * ratio)
        self.records.append(RequestRecord(*predicted, envelope_changed=changed))
        self._previous, self._envelope, self._lead = items, envelope, lead

    def _unchanged(self, items: list[object]) -> int:
        """How many leading items the request shares with the one before: equal, and not
        changed in place since that one was recorded (its snapshots)."""
        shared = 0
        if self._previous is not None:
            for a, b in zip(items, self._previous, strict=False):
                if a is not b and a != b:
                    break
                shared += 1
        prints = self._prints
        prints.truncate(shared)
        moved = prints.changed(items, shared)
        if moved:
            shared = min(moved)
            prints.truncate(shared)
        for item in items[len(prints.items) :]:
            prints.add(item, True)
        prints.seal(items)
        return shared

    def observe(self, result: Result, usage: object) -> float:
        """Take the provider's usage of a request of this session (and teach the policy, as
        ``policy.observe`` does); returns the ratio now in force."""
        reported = read_usage(usage)
        ratio = self.policy.observe(result, reported)  # refuses anything but a Result
        with self._lock:
            at = self._pending.pop(result, None)
            if at is not None:
                old = self.records[at]
                self.records[at] = dataclasses.replace(
                    old,
                    reported_input=reported.input_tokens,
                    reported_cached=reported.cached_tokens,
                    reported_writes=reported.cache_write_tokens,
                )
        return ratio

    # ------------------------------------------------------------------ totals

    def totals(self) -> dict[str, Any]:
        """Predicted and reported, summed over the requests both are known for."""
        seen = [r for r in self.records if r.reported_input is not None]
        pricing = self.policy.pricing(self.model)
        write, read = pricing.cache_write, pricing.cache_read
        out: dict[str, Any] = {
            "requests": len(self.records),
            "reported_requests": len(seen),
            "predicted_input": sum(r.predicted_input for r in seen),
            "reported_input": sum(r.reported_input or 0 for r in seen),
            "predicted_cached": sum(r.predicted_cached for r in seen),
            "reported_cached": sum(r.reported_cached or 0 for r in seen),
            "predicted_cost": round(sum(r.cost(write, read, reported=False) or 0 for r in seen), 1),
            "reported_cost": round(sum(r.cost(write, read, reported=True) or 0 for r in seen), 1),
        }
        out["notes"] = self._notes(out)
        return out

    def _notes(self, t: dict[str, Any]) -> list[str]:
        notes = []
        changed = [i for i, r in enumerate(self.records) if r.envelope_changed]
        if changed:
            shown = ", ".join(map(str, changed[:10])) + (", ..." if len(changed) > 10 else "")
            notes.append(
                f"{len(changed)} request(s) ({shown}) changed the system prompt, the tools or "
                "the model from the request before: nothing of them could be read from the "
                "prompt cache (a date or a counter in the system prompt does this)"
            )
        if t["predicted_cached"] and t["reported_cached"] < CACHE_SHORTFALL * t["predicted_cached"]:
            notes.append(
                f"the provider's cache reads ({t['reported_cached']:,} tokens) are far below "
                f"what ctxwin expected ({t['predicted_cached']:,}): a breakpoint, a cache TTL "
                "or a reordering of the request broke the prompt cache"
            )
        return notes

    # ------------------------------------------------------------------ renderings

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "kind": "session",
            "requests": [
                {
                    "predicted": {"input": r.predicted_input, "cached": r.predicted_cached},
                    "reported": None
                    if r.reported_input is None
                    else {
                        "input": r.reported_input,
                        "cached": r.reported_cached,
                        "cache_writes": r.reported_writes,
                    },
                }
                for r in self.records
            ],
            "total": self.totals(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def _rows(self) -> list[list[str]]:
        def n(v: int | None) -> str:
            return "-" if v is None else fmt_num(v)

        return [
            [
                str(i),
                fmt_num(r.predicted_input),
                n(r.reported_input),
                fmt_num(r.predicted_cached),
                n(r.reported_cached),
            ]
            for i, r in enumerate(self.records)
        ]

    _HEADER = ("request", "predicted in", "reported in", "predicted cached", "reported cached")

    def to_text(self, width: int = 100) -> str:
        t = self.totals()
        cols = [Col(h) for h in self._HEADER]
        out = [
            "ctxwin session",
            f"{t['requests']:,} requests ({t['reported_requests']:,} with usage); input tokens "
            f"predicted {t['predicted_input']:,}, reported {t['reported_input']:,}; cache reads "
            f"predicted {t['predicted_cached']:,}, reported {t['reported_cached']:,}; cost "
            f"predicted {t['predicted_cost']:,}, reported {t['reported_cost']:,}",
            "",
            *text_table(cols, self._rows(), width),
        ]
        out += [f"note: {n}" for n in t["notes"]]
        return "\n".join(out) + "\n"

    def to_markdown(self) -> str:
        t = self.totals()
        out = ["### ctxwin session", "", *md_table(self._HEADER, self._rows(), {0, 1, 2, 3, 4})]
        out += ["", f"Cost: predicted {t['predicted_cost']:,}, reported {t['reported_cost']:,}."]
        out += [f"- {n}" for n in t["notes"]]
        return "\n".join(out) + "\n"
