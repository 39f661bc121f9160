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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ctxwin._core.model import is_reasoning_item
from ctxwin._engine import Policy
from ctxwin._exceptions import InputError, PolicyError
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
    if not 0 <= holdout < 1:
        raise ValueError(f"holdout must be in [0, 1), not {holdout}")
    order = sorted(range(len(names)), key=lambda i: hashlib.sha256(names[i].encode()).digest())
    wanted = round(len(names) * holdout)
    n_out = max(1, min(wanted, len(names) - 1)) if holdout and len(names) >= 2 else 0
    out = sorted(order[:n_out])
    return [i for i in range(len(names)) if i not in out], out


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


def _has_reasoning(body: object) -> bool:
    """Whether a trace holds reasoning items (OpenAI Responses), which ``clear_reasoning``
    may clear."""
    try:
        conv = get_adapter(detect(body)).parse(body)
    except InputError:
        return False  # the replay names the trace
    return any(is_reasoning_item(m) for m in conv.messages)


def _figures(
    config: Mapping[str, Any],
    bodies: Sequence[tuple[str, object]],
    pricing: str | Pricing | None,
    make: Callable[[Mapping[str, Any]], Policy],
) -> Figures:
    policy = make(config)
    cost = unmanaged = 0.0
    peak = problems = 0
    window = 0
    for name, body in bodies:
        try:
            r = replay(body, policy, name=name, pricing=pricing)
        except InputError as e:  # one of many traces: say which
            raise InputError(f"trace {name!r}: {e}") from e
        cost += r.managed.effective_cost
        unmanaged += r.unmanaged.effective_cost
        peak = max(peak, r.managed.peak)
        problems += r.managed.problems
        window = r.context_window or window
    return Figures(len(bodies), cost, unmanaged, peak, problems, window)


def tune(
    traces: Sequence[tuple[str, object]],
    policy: Policy,
    *,
    pricing: str | Pricing | None = None,
    holdout: float = 0.25,
    passes: int = 2,
    progress: Callable[[str], None] | None = None,
) -> TuneResult:
    """Search the open settings of ``policy`` on ``traces`` (name, request body) pairs."""
    if not traces:
        raise ValueError("tune needs at least one trace")
    if not isinstance(policy, Policy):
        raise PolicyError(
            f"tune takes a Policy (ctxwin.load_policy(...)), not {type(policy).__name__}",
            key="policy",
        )
    names = [n for n, _ in traces]
    train_i, out_i = _split(names, holdout)
    train = [traces[i] for i in train_i]
    held = [traces[i] for i in out_i]
    counter = policy.counter.inner

    def make(config: Mapping[str, Any]) -> Policy:
        return Policy(dict(config), counter=counter, summarizer=policy.summarizer)

    knobs = dict(KNOBS)
    if not any(_has_reasoning(body) for _, body in train):
        del knobs["window.clear_reasoning"]
    current = policy.config.model_dump(mode="json", exclude_defaults=True)
    best, best_fig = current, _figures(current, train, pricing, make)
    base_fig = best_fig
    trials = 1
    for _ in range(passes):
        improved = False
        for knob, values in knobs.items():
            for value in values:
                candidate = _with(best, knob, value)
                if candidate == best:
                    continue
                try:
                    fig = _figures(candidate, train, pricing, make)
                except PolicyError:  # e.g. a drop_target above this ceiling's target
                    continue
                trials += 1
                if progress is not None:
                    progress(f"{knob} = {value}: {fig.ratio:.3f}x")
                better = fig.feasible and (not best_fig.feasible or fig.cost < best_fig.cost)
                if better:
                    best, best_fig, improved = candidate, fig, True
        if not improved:
            break
    return TuneResult(
        current,
        best,
        tuple(n for n, _ in train),
        tuple(n for n, _ in held),
        base_fig,
        best_fig,
        _figures(current, held, pricing, make) if held else None,
        _figures(best, held, pricing, make) if held else None,
        trials,
    )
