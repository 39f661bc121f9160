"""Tune what a policy leaves open against replayed cost: ``ctxwin tune``.

The search varies ``window.keep_rounds``, the ``trigger``/``target`` ceiling, the window's
``strategy``, ``max_overrun``, ``overrun_grace``, ``drop_target`` and ``clear_reasoning``
(which changes nothing on traces without reasoning items, so it is tried only on traces that
have some), and the default cap (``tools["*"].max_tokens``), one knob at a time from the
current policy (coordinate descent, ``passes`` rounds), keeping a setting only when it
lowers the summed effective cost of the training traces with every request within the
context window and no pairing problem; a setting the policy refuses (a ``drop_target`` above
the ``target``) is skipped. The traces are split first: a ``holdout`` fraction (by a hash of
their names, so the split is stable) is never looked at by the search, and the figures of
both the current and the tuned policy are reported on each part.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ctxwin._args import checked_policy
from ctxwin._core.model import is_reasoning_item
from ctxwin._engine import Policy
from ctxwin._exceptions import InputError, PolicyError
from ctxwin._policy.compile import compile_policy, validate_config
from ctxwin._policy.tables import Pricing
from ctxwin.formats import detect, get_adapter
from ctxwin.replay import replay

__all__ = ["Figures", "TuneResult", "tune"]

KNOBS: dict[str, list[Any]] = {
    "window.keep_rounds": [1, 2, 3, 4, 6],
    "window.ceiling": [(0.5, 0.3), (0.6, 0.4), (0.75, 0.45), (0.85, 0.6), (0.95, 0.6), (0.95, 0.7)],
    "window.strategy": ["cost", "threshold"],
    "window.max_overrun": [0.05, 0.1, 0.2, None],
    "window.overrun_grace": [0, 2, 5],
    "window.drop_target": [0, 0.2, 0.3],
    "window.clear_reasoning": [False, True],
    'tools."*".max_tokens': [500, 1000, 2000, 4000, 8000],
}


@dataclass(frozen=True, slots=True)
class Figures:
    """Replayed figures of one policy on a set of traces."""

    traces: int
    cost: float
    unmanaged_cost: float
    peak: int
    problems: int
    window: int

    @property
    def ratio(self) -> float:
        return self.cost / self.unmanaged_cost if self.unmanaged_cost else 1.0

    @property
    def feasible(self) -> bool:
        return self.problems == 0 and self.peak <= self.window


@dataclass(frozen=True, slots=True)
class TuneResult:
    current: dict[str, Any]
    best: dict[str, Any]
    train: tuple[str, ...]
    holdout: tuple[str, ...]
    current_train: Figures
    best_train: Figures
    current_holdout: Figures | None
    best_holdout: Figures | None
    trials: int

    def diff(self) -> str:
        """The tuned settings as a YAML diff against the current policy."""
        old = yaml.safe_dump(self.current, sort_keys=True).splitlines()
        new = yaml.safe_dump(self.best, sort_keys=True).splitlines()
        if old == new:
            return "  (no change: the current settings are the best found)\n"
        import difflib

        lines = difflib.unified_diff(old, new, "current", "tuned", lineterm="", n=2)
        return "\n".join(lines) + "\n"


def _split(names: Sequence[str], holdout: float) -> tuple[list[int], list[int]]:
    if isinstance(holdout, bool) or not isinstance(holdout, int | float):
        raise TypeError(f"holdout must be a number from 0 to below 1, not {holdout!r:.40}")
    if not 0 <= holdout < 1:
        raise ValueError(f"holdout must be at least 0 and below 1 (a fraction), not {holdout}")
    order = sorted(range(len(names)), key=lambda i: hashlib.sha256(names[i].encode()).digest())
    wanted = round(len(names) * holdout)
    n_out = max(1, min(wanted, len(names) - 1)) if holdout and len(names) >= 2 else 0
    out = sorted(order[:n_out])
    return [i for i in range(len(names)) if i not in out], out


def _named(traces: object) -> list[tuple[str, object]]:
    """``traces`` as (name, body) pairs, a name a string or a path (``os.PathLike``);
    anything else a TypeError, and no trace at all a ValueError."""
    if isinstance(traces, str | bytes | Mapping) or not isinstance(traces, Iterable):
        raise TypeError(f"traces must be a list of (name, body) pairs, not {type(traces).__name__}")
    out = []
    for i, pair in enumerate(traces):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(
                f"traces are (name, body) pairs, e.g. [('a.json', body), ...]; trace {i} is "
                f"a {type(pair).__name__}"
                + (f" of {len(pair)}" if isinstance(pair, tuple | list) else "")
            )
        name, body = pair
        if not isinstance(name, str | os.PathLike):
            raise TypeError(
                f"trace {i}: a name must be a string or a path, not {type(name).__name__}"
            )
        out.append((str(name), body))
    if not out:
        raise ValueError("tune needs at least one trace: traces is empty")
    return out


def _effective(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting of ``config``, the defaults included: what a policy of it does."""
    return validate_config(config).model_dump(mode="json")


SETTINGS = tuple(
    part
    for knob in KNOBS
    for part in (("window.trigger", "window.target") if knob == "window.ceiling" else (knob,))
)
"""The settings the knobs move, one by one (the ceiling is two)."""


def _setting(effective: Mapping[str, Any], name: str) -> Any:
    if name.startswith("window."):
        return effective["window"][name.removeprefix("window.")]
    return (effective["tools"].get("*") or {}).get("max_tokens")


def _as_changed(current: dict[str, Any], best: dict[str, Any]) -> dict[str, Any]:
    """``current`` with the settings whose effective value ``best`` changed, so that the
    diff shows no setting the policy already has (written out or by default)."""
    was, now = _effective(current), _effective(best)
    out = current
    for name in SETTINGS:
        if _setting(now, name) != _setting(was, name):
            out = _with(out, name, _setting(now, name))
    return out


def _with(config: dict[str, Any], knob: str, value: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(config))  # a deep copy
    window = data.setdefault("window", {})
    if knob == "window.ceiling":
        window["trigger"], window["target"] = value
    elif knob.startswith("window."):
        window[knob.removeprefix("window.")] = value
    else:
        data.setdefault("tools", {}).setdefault("*", {})["max_tokens"] = value
    return data


def _has_reasoning(body: object, format: str | None) -> bool:
    """Whether a trace holds reasoning items (OpenAI Responses), which ``clear_reasoning``
    may clear."""
    try:
        conv = get_adapter(format or detect(body)).parse(body)
    except InputError:
        return False  # the replay names the trace
    return any(is_reasoning_item(m) for m in conv.messages)


@dataclass(frozen=True, slots=True)
class _Run:
    """How every replay of one tune runs: the traces' format, the pricing, the policy."""

    format: str | None
    pricing: str | Pricing | None
    make: Callable[[Mapping[str, Any]], Policy]


def _figures(config: Mapping[str, Any], bodies: Sequence[tuple[str, object]], run: _Run) -> Figures:
    policy = run.make(config)
    cost = unmanaged = 0.0
    peak = problems = 0
    window = 0
    for name, body in bodies:
        try:
            r = replay(body, policy, format=run.format, name=name, pricing=run.pricing)
        except InputError as e:  # one of many traces: say which
            raise InputError(f"trace {name!r}: {e}") from e
        cost += r.managed.effective_cost
        unmanaged += r.unmanaged.effective_cost
        peak = max(peak, r.managed.peak)
        problems += r.managed.problems
        window = r.context_window or window
    return Figures(len(bodies), cost, unmanaged, peak, problems, window)


def _search(
    current: dict[str, Any],
    train: Sequence[tuple[str, object]],
    run: _Run,
    knobs: Mapping[str, list[Any]],
    passes: int,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, Any], Figures, Figures, int]:
    """Coordinate descent from ``current``: the best settings, their figures, the current
    ones' and the settings replayed. A candidate that changes no effective setting is not
    replayed."""
    best, best_fig = current, _figures(current, train, run)
    base_fig, seen, trials = best_fig, _effective(current), 1
    for _ in range(passes):
        improved = False
        for knob, values in knobs.items():
            for value in values:
                candidate = _with(best, knob, value)
                try:
                    effective = _effective(candidate)
                    if effective == seen:
                        continue
                    fig = _figures(candidate, train, run)
                except PolicyError:  # e.g. a drop_target above this ceiling's target
                    continue
                trials += 1
                if progress is not None:
                    progress(f"{knob} = {value}: {fig.ratio:.3f}x")
                if fig.feasible and (not best_fig.feasible or fig.cost < best_fig.cost):
                    best, best_fig, seen, improved = candidate, fig, effective, True
        if not improved:
            break
    return best, best_fig, base_fig, trials


def tune(
    traces: Sequence[tuple[str | os.PathLike[str], object]],
    policy: Policy,
    *,
    format: str | None = None,
    pricing: str | Pricing | None = None,
    holdout: float = 0.25,
    passes: int = 2,
    progress: Callable[[str], None] | None = None,
) -> TuneResult:
    """Search the open settings of ``policy`` on ``traces``, (name, request body) pairs (a
    name a string or a path). ``format`` names the traces' wire format (else each is
    detected: a text-only chat may be ambiguous). ``holdout`` is the fraction held out of
    the search, from 0 to below 1; ``passes`` the rounds of the search.

    Raises :class:`~ctxwin.PolicyError` for a ``policy`` that is not a Policy,
    :class:`~ctxwin.InputError` naming a trace that cannot be replayed, TypeError for an
    argument of the wrong type and ValueError for no trace, or a ``holdout`` or ``passes``
    out of range.
    """
    named = _named(traces)
    policy = checked_policy(policy, "tune")
    if isinstance(passes, bool) or not isinstance(passes, int):
        raise TypeError(f"passes must be a whole number, not {passes!r:.40}")
    if passes < 0:
        raise ValueError(f"passes must be 0 or more, not {passes}")
    fmt = get_adapter(format).name if format is not None else None
    train_i, out_i = _split([n for n, _ in named], holdout)
    train = [named[i] for i in train_i]
    held = [named[i] for i in out_i]
    counter = policy.counter.inner

    def make(config: Mapping[str, Any]) -> Policy:
        # compiled here: a candidate is the user's policy, which warned once when it loaded
        compiled = compile_policy(dict(config), tokenizers=None)  # the counter is passed
        return Policy(compiled, counter=counter, summarizer=policy.summarizer, format=fmt)

    run = _Run(fmt, pricing, make)
    knobs = dict(KNOBS)
    if not any(_has_reasoning(body, fmt) for _, body in train):
        del knobs["window.clear_reasoning"]
    current = policy.config.model_dump(mode="json", exclude_defaults=True)
    found, best_fig, base_fig, trials = _search(current, train, run, knobs, passes, progress)
    best = _as_changed(current, found)
    return TuneResult(
        current,
        best,
        tuple(n for n, _ in train),
        tuple(n for n, _ in held),
        base_fig,
        best_fig,
        _figures(current, held, run) if held else None,
        _figures(best, held, run) if held else None,
        trials,
    )
