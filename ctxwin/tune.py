"""Tune what a policy leaves open against replayed cost: ``ctxwin tune``.

The search varies ``window.keep_rounds``, the ``trigger``/``target`` ceiling, the window's
``strategy``, ``max_overrun``, ``overrun_grace``, ``drop_target`` and ``clear_reasoning``
(which changes nothing on traces without reasoning items, so it is tried only on traces that
have some), and the default cap (``tools["*"].max_tokens``), one knob at a time from the
current policy (coordinate descent, ``passes`` rounds), keeping a setting only when it
lowers the summed effective cost of the training traces with every request within the
context window of its trace (traces of several models have several) and no pairing
problem; a setting the policy refuses (a ``drop_target`` above the ``target``) is skipped.
Each trace is held to what the current settings do with it (:func:`_admissible`): a trace
no setting fits (its last user message alone over the window) holds back no setting that
takes it no further over, and :meth:`TuneResult.diff` says that no setting keeps every trace
within its window. A setting that brings more traces within their window is kept even at a
higher cost.
The traces are split first: a ``holdout`` fraction (by a hash of their names, each a path
relative to the folder the traces share, so the split is stable whatever the spelling of
that folder) is never looked at by the search, and the figures of both the current and the
tuned policy are reported on each part.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from ctxwin._args import checked_policy
from ctxwin._core.model import is_reasoning_item
from ctxwin._engine import Policy
from ctxwin._entry import ModelCounters
from ctxwin._exceptions import BudgetExceeded, InputError, PolicyError
from ctxwin._policy.compile import CompiledPolicy, compile_policy, validate_config
from ctxwin._policy.tables import Pricing
from ctxwin._tune_files import defaults_path, tool_files, with_tool_files, written_rules
from ctxwin._tune_traces import named_traces, split_traces, trace_messages
from ctxwin.formats import detect, get_adapter
from ctxwin.replay import replay
from ctxwin.steps._base import Step

__all__ = ["Figures", "TuneProgress", "TuneResult", "TunedFile", "tune"]

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
    """The managed peak of :attr:`peak_trace`, the trace whose peak is the largest part of
    its own context window (traces of other models have other windows: the largest peak
    may be well within its window while a smaller one is over its own)."""
    problems: int
    window: int
    """The context window of :attr:`peak_trace`."""
    over: int = 0
    """Traces the policy took over the window under ``overflow: error`` (their replay
    stopped there: their cost is not in ``cost``)."""
    peak_trace: str | None = None
    """The trace of :attr:`peak` and :attr:`window` (None: no trace had a request)."""
    per_trace: tuple[tuple[int, int], ...] = ()
    """Each trace's managed peak and context window, in the order of the traces (where its
    replay stopped for a trace over the window under ``overflow: error``)."""

    @property
    def ratio(self) -> float:
        return self.cost / self.unmanaged_cost if self.unmanaged_cost else 1.0

    @property
    def feasible(self) -> bool:
        """No pairing problem, and every trace within its own context window (so
        :attr:`peak_trace`, the nearest to its window or furthest over)."""
        return self.problems == 0 and self.peak <= self.window and not self.over

    @property
    def over_window(self) -> int:
        """Traces with a request over their own context window."""
        return sum(peak > window for peak, window in self.per_trace)


@dataclass(frozen=True, slots=True)
class TunedFile:
    """A tool file the tuned settings change: the file of ``tool: "*"``, where the default
    cap the search varies lives when the policy's folder has one (its rules as loaded)."""

    path: str
    current: dict[str, Any]
    tuned: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TuneResult:
    current: dict[str, Any]
    """The defaults' settings (``defaults.yaml``, or the policy's dict) as they are."""
    best: dict[str, Any]
    """The defaults' settings tuned; the default cap is in :attr:`files` instead when a
    tool file ``tool: "*"`` holds it."""
    train: tuple[str, ...]
    holdout: tuple[str, ...]
    current_train: Figures
    best_train: Figures
    current_holdout: Figures | None
    best_holdout: Figures | None
    trials: int
    files: tuple[TunedFile, ...] = ()
    """The tool files the tuned settings change."""
    defaults_file: str | None = None
    """The file of :attr:`current` (None: the policy is a dict, or its folder has none)."""
    searched: bool = True
    """Whether any setting but the current one was looked at (``passes`` 0: none)."""

    def diff(self) -> str:
        """The tuned settings as a YAML diff against the current policy: the defaults, then
        each tool file changed, each under its file's name when it has one."""
        import difflib

        out: list[str] = []
        sections = [(self.defaults_file, self.current, self.best)]
        sections += [(f.path, f.current, f.tuned) for f in self.files]
        for path, current, tuned in sections:
            new = yaml.safe_dump(tuned, sort_keys=True).splitlines()
            if path is not None and not current and not os.path.exists(path):
                names, old = ("/dev/null", f"tuned: {path} (a new file)"), []
            else:
                old = yaml.safe_dump(current, sort_keys=True).splitlines()
                names = (
                    ("current", "tuned") if path is None else (f"current: {path}", f"tuned: {path}")
                )
            if current != tuned:
                out += difflib.unified_diff(old, new, *names, lineterm="", n=2)
        unfit = _unfit(self.best_train)
        if not out:
            why = "the current settings are the best found"
            if not self.searched:
                why = "nothing was searched, passes is 0"
            elif unfit:
                why = f"{unfit}, and none tried is cheaper without taking a trace further over"
            return f"  (no change: {why})\n"
        note = f"  ({unfit}; the tuned ones take no trace further over it)\n" if unfit else ""
        return "\n".join(out) + "\n" + note


def _unfit(fig: Figures) -> str:
    """Why ``fig`` (the tuned settings' figures) is not feasible: the trace furthest over
    its window, or the pairing problems left; "" when it is feasible."""
    if fig.feasible:
        return ""
    if fig.over_window or fig.peak > fig.window:
        at = f"{fig.peak_trace}: {fig.peak:,} / {fig.window:,} tokens"
        return f"no setting keeps every trace within its window ({at})"
    return f"no setting leaves no pairing problem ({fig.problems} left)"


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


def _placed(best: dict[str, Any], policy: Policy) -> tuple[dict[str, Any], tuple[TunedFile, ...]]:
    """``best`` with the default cap moved to the tool file ``tool: "*"`` if one holds the
    ``"*"`` rules: in the defaults, the policy would not load ("tool '*' already has rules
    in ..."), and the figures are of the file's rules with that cap."""
    rules = tool_files(policy).get("*")
    if rules is None or "*" not in best.get("tools", {}):
        return best, ()
    path = next(t.source for t in policy.compiled.tools if t.pattern == "*")
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(best))  # a deep copy
    changed = data["tools"].pop("*")
    if not data["tools"]:
        del data["tools"]
    current = {"tool": "*", **written_rules(path, rules)}
    return data, (TunedFile(path, current, {**current, **changed}),)


def _has_reasoning(body: object, format: str | None) -> bool:
    """Whether a trace holds reasoning items (OpenAI Responses), which ``clear_reasoning``
    may clear."""
    try:
        conv = get_adapter(format or detect(body)).parse(body)
    except InputError:
        return False  # the replay names the trace
    return any(is_reasoning_item(m) for m in conv.messages)


class TuneProgress(Protocol):
    """A progress bar :func:`tune` drives (the command line's is one): :meth:`start` once,
    with the most settings the search may look at, then :meth:`advance` for each, with a
    line that says which and how it did."""

    def start(self, total: int) -> None: ...

    def advance(self, name: str) -> None: ...


ProgressLike = Callable[[str], None] | TuneProgress


def _nothing(_: object) -> None:
    """No progress to tell."""


def _progress(progress: object) -> tuple[Callable[[int], None], Callable[[str], None]]:
    """``progress`` as (start, tell): a bar's methods, or a callable told each line."""
    start, advance = getattr(progress, "start", None), getattr(progress, "advance", None)
    if callable(start) and callable(advance):
        return start, advance
    if progress is None:
        return _nothing, _nothing
    if callable(progress):
        return _nothing, progress
    raise TypeError(
        "progress must be a callable(message) or an object with start(total) and "
        f"advance(message) (a progress bar), not {type(progress).__name__}"
    )


@dataclass(frozen=True, slots=True)
class _Run:
    """How every replay of one tune runs: the traces' format, the pricing, the policy of
    each setting, and where each setting's line goes."""

    format: str | None
    pricing: str | Pricing | None
    make: Callable[[Mapping[str, Any]], Policy]
    tell: Callable[[str], None]


def _fresh(step: Step) -> Step:
    """A copy of one of the user's steps, with memos of its own: a candidate's memos, keyed
    by its rules, stay out of the user's step (they would hold every trace after the search,
    under the id of rules that are gone). A step that cannot be copied is shared."""
    try:
        copied = copy.copy(step)
    except (TypeError, copy.Error):
        return step
    clear = getattr(copied, "clear_memo", None)
    if callable(clear) and copied is not step:
        clear()
    return copied


def _candidates(policy: Policy, fmt: str | None) -> Callable[[Mapping[str, Any]], Policy]:
    """The policy of each setting: ``policy`` with other settings and nothing else (its
    counter, its models' counters, summarizer, steps, calibration as it stands, store)."""
    counter = policy.counter.inner
    files = tool_files(policy)
    steps = list(policy.steps)
    calibration = copy.deepcopy(policy.calibration)  # as it stands when the search starts
    models = policy._counters.own  # as with_overrides passes them on

    def make(config: Mapping[str, Any]) -> Policy:
        # compiled here: a candidate is the user's policy, which warned once when it loaded
        source = with_tool_files(config, files)
        compiled = compile_policy(source, tokenizers=None)  # the counter is passed
        new = Policy(
            compiled,
            counter=counter,
            summarizer=policy.summarizer,
            steps=[_fresh(s) for s in steps],
            format=fmt or policy.format,
        )
        new._counters = ModelCounters(new.counter, models)
        new.calibration = calibration  # apply only reads it
        new.shelf = policy.shelf
        return new

    return make


def _rebuilt(policy: Policy, candidate: Policy) -> None:
    """Raise :class:`~ctxwin.PolicyError` when the policy of the current settings is not
    ``policy``'s rules: the figures would be another policy's."""
    if _rules(candidate.compiled) == _rules(policy.compiled):
        return
    raise PolicyError(
        "tune cannot rebuild this policy from its settings (its rules were changed after it "
        "loaded?): the figures would be another policy's; tune a policy from load_policy",
        key="policy",
    )


def _rules(compiled: CompiledPolicy) -> tuple[object, ...]:
    """Every setting and rule of a compiled policy (the tool files' in its tools)."""
    settings = compiled.config.model_dump(exclude={"tools"})
    return settings, *((t.pattern, t.rules) for t in compiled.tools)


def _figures(
    config: Mapping[str, Any], bodies: Sequence[tuple[str, object]], run: _Run, label: str
) -> Figures:
    """The figures of ``config`` on ``bodies``: each trace's peak is judged against its own
    context window (``context_window: auto`` over traces of several models)."""
    policy = run.make(config)
    cost = unmanaged = 0.0
    problems = over = 0
    per_trace: list[tuple[int, int]] = []
    tightest: tuple[float, int, int, str] | None = None  # (peak / window, peak, window, name)
    for name, body in bodies:
        try:
            r = replay(body, policy, format=run.format, name=name, pricing=run.pricing)
        except InputError as e:  # one of many traces: say which
            raise InputError(f"trace {name!r}: {e}") from e
        except BudgetExceeded as e:  # overflow: error, and this setting overflows: infeasible
            over += 1
            peak, window = e.tokens, e.limit
        else:
            cost += r.managed.effective_cost
            unmanaged += r.unmanaged.effective_cost
            problems += r.managed.problems
            peak, window = r.managed.peak, r.context_window
        per_trace.append((peak, window))
        if window > 0:  # (none: a trace without a request)
            tightest = max(tightest or (-1.0, 0, 0, ""), (peak / window, peak, window, name))
    _, peak, window, worst = tightest or (0.0, 0, 0, None)
    figures = Figures(
        len(bodies), cost, unmanaged, peak, problems, window, over, worst, tuple(per_trace)
    )
    run.tell(f"{label}: {figures.ratio:.3f}x")
    return figures


def _admissible(fig: Figures, base: Figures) -> bool:
    """Whether a candidate's figures hold every trace as the current settings' (``base``)
    do: no trace they keep within its context window goes over it, none already over goes
    further over, and no pairing problem is added. A trace that no setting fits (its last
    user message alone over the window) holds back no setting that leaves it as it was."""
    if fig.problems > base.problems:
        return False
    pairs = zip(fig.per_trace, base.per_trace, strict=True)
    return all(peak <= max(window, was) for (peak, window), (was, _) in pairs)


def _rank(fig: Figures) -> tuple[int, int, float]:
    """The better of two admissible figures is the lower: fewer traces over their window
    first, then fewer pairing problems, then the lower cost."""
    return fig.over_window, fig.problems, fig.cost


def _search(
    current: dict[str, Any],
    train: Sequence[tuple[str, object]],
    run: _Run,
    knobs: Mapping[str, list[Any]],
    passes: int,
) -> tuple[dict[str, Any], Figures, Figures, int]:
    """Coordinate descent from ``current``: the best settings, their figures, the current
    ones' and the settings replayed. A candidate that changes no effective setting is not
    replayed."""
    best, best_fig = current, _figures(current, train, run, "current settings")
    base_fig, seen, trials = best_fig, _effective(current), 1
    for _ in range(passes):
        improved = False
        for knob, values in knobs.items():
            for value in values:
                candidate = _with(best, knob, value)
                try:
                    effective = _effective(candidate)
                    if effective == seen:
                        run.tell(f"{knob} = {value}: the setting in force (not replayed)")
                        continue
                    fig = _figures(candidate, train, run, f"{knob} = {value}")
                except PolicyError:  # e.g. a drop_target above this ceiling's target
                    run.tell(f"{knob} = {value}: refused by the policy (not replayed)")
                    continue
                trials += 1
                if _admissible(fig, base_fig) and _rank(fig) < _rank(best_fig):
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
    progress: ProgressLike | None = None,
) -> TuneResult:
    """Search the open settings of ``policy`` on ``traces``, (name, request body) pairs (a
    name a string or a path). ``format`` names the traces' wire format (else each is
    detected: a text-only chat may be ambiguous). ``holdout`` is the fraction held out of
    the search, from 0 to below 1; ``passes`` the rounds of the search. Each setting is
    replayed as ``policy`` itself with other settings: its counters (``model_counters``
    too), summarizer, steps, calibration and store.

    ``progress`` hears of every setting looked at, the current one and the held-out replays
    included, with a line such as ``"window.keep_rounds = 3: 0.812x"``: a callable is called
    with each line; a :class:`TuneProgress` (an object with ``start`` and ``advance``, a
    progress bar) is started once with the most lines the search may give, then advanced
    with each (the search stops early when a pass improves nothing).

    Raises :class:`~ctxwin.PolicyError` for a ``policy`` that is not a Policy, or one whose
    rules are not those of its settings (changed after it loaded: tune would replay another
    policy), :class:`~ctxwin.InputError` naming a trace that cannot be replayed, TypeError
    for an argument of the wrong type and ValueError for no trace, or a ``holdout`` or
    ``passes`` out of range.
    """
    named = named_traces(traces)
    policy = checked_policy(policy, "tune")
    if isinstance(passes, bool) or not isinstance(passes, int):
        raise TypeError(f"passes must be a whole number, not {passes!r:.40}")
    if passes < 0:
        raise ValueError(f"passes must be 0 or more, not {passes}")
    start, tell = _progress(progress)
    fmt = get_adapter(format).name if format is not None else None
    fmt_items = [trace_messages(body, fmt) for _, body in named]
    train_i, out_i = split_traces([n for n, _ in named], holdout, fmt_items)
    train = [named[i] for i in train_i]
    held = [named[i] for i in out_i]
    run = _Run(fmt, pricing, _candidates(policy, fmt), tell)
    current = policy.config.model_dump(mode="json", exclude_unset=True)
    _rebuilt(policy, run.make(current))
    knobs = dict(KNOBS)
    if not any(_has_reasoning(body, fmt) for _, body in train):
        del knobs["window.clear_reasoning"]
    start(1 + passes * sum(map(len, knobs.values())) + (2 if held else 0))
    found, best_fig, base_fig, trials = _search(current, train, run, knobs, passes)
    best = _as_changed(current, found)
    shown, files = _placed(best, policy)
    return TuneResult(
        current,
        shown,
        tuple(n for n, _ in train),
        tuple(n for n, _ in held),
        base_fig,
        best_fig,
        _figures(current, held, run, "held out, current settings") if held else None,
        _figures(best, held, run, "held out, tuned settings") if held else None,
        trials,
        files,
        defaults_path(policy),
        passes > 0,
    )
