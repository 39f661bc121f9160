"""Steady-state and cold apply times on a long coding-agent history (issue 3, section 6).

    python benchmarks/steady_state.py [--rounds 434] [--steps 40] [--repeat 5] [--kept]
                                      [--recall [--store URL]] [--breakpoints auto] [--model M]
                                      [--detect]

(a) Steady state: a policy has applied the history up to a round; the agent appends one
    round (an assistant turn with its calls and results) and applies again. Timed for
    ``--steps`` consecutive rounds at the end of the history, ``--repeat`` times with a fresh
    policy. Target: median <= 1 ms.
(b) Cold: the first apply of a fresh policy on the whole history, against one tiktoken
    ``encode_ordinary`` of all the history's text joined. Target: ratio <= 1.2.

``--kept`` times (a) for a client that keeps ctxwin's output as its history: each request
is the last apply's output messages with the new round appended.
``--recall`` turns recall on (every shortened result's original kept in the store, its
handle quoted): ``--store memory`` (default), ``sqlite:///path.db`` or ``redis://host:port/0``.
``--detect`` loads the policy without ``format=``, so that every apply tells the request's
format from its shape, as for a caller that does not say it.
``--breakpoints auto`` sets ``cache_breakpoints: auto`` and sends the bodies for ``--model``
(``gpt-5.6`` by default then: OpenAI Chat takes its explicit breakpoints), so every request
also gets its cache breakpoints placed.

Only wall-clock time of ``policy.apply`` is measured (the request bodies are built before);
the garbage collector stays on, as in an agent.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import itertools
import json
import platform
import re
import statistics
import sys
import time
from typing import Any

from _histories import REPO, all_text, coding_history, request_points

import ctxwin
import ctxwin.tokens
from ctxwin._policy.schema import RecallConfig

POLICY = REPO / "policies" / "coding"
STORE: dict[str, Any] = {}
"""``{"recall": bool, "store": url, "breakpoints": "keep" | "auto", "model": str | None,
"detect": bool}`` from the command line (see :func:`load` and :func:`request_body`)."""


def load(**kwargs: Any) -> ctxwin.Policy:
    """The benchmark's policy, with recall, the store and the cache breakpoints the command
    line asks for."""
    fmt = None if STORE.get("detect") else "openai-chat"
    policy = ctxwin.load_policy(POLICY, format=fmt, **kwargs)
    update: dict[str, Any] = {}
    if STORE.get("recall"):
        update["recall"] = RecallConfig(enabled=True)
    if STORE.get("breakpoints", "keep") != "keep":
        update["cache_breakpoints"] = STORE["breakpoints"]
    if not update:
        return policy
    config = policy.config.model_copy(update=update)
    compiled = dataclasses.replace(policy.compiled, config=config)
    store = STORE["store"] if STORE.get("recall") else None
    return ctxwin.Policy(compiled, format=fmt, store=store, **kwargs)


def request_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A request body of these messages, for the model the command line names, if any."""
    model = STORE.get("model")
    return {"messages": messages} if model is None else {"model": model, "messages": messages}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import os

    return (
        f"{platform.platform()} | {cpu} | {os.cpu_count()} CPUs | "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f}"


def steady(
    messages: list[dict[str, Any]], steps: int, repeat: int, kept: bool = False
) -> tuple[list[float], list[list[float]], list[int]]:
    """Times of the last ``steps`` applies, each after the previous prefix was applied.

    ``kept``: the client keeps ctxwin's output as its history (pydantic-ai's
    ``process_history``, a loop that sends back ``result.request``): each request is the
    last apply's output messages with the new round appended."""
    chosen = request_points(messages)[-(steps + 1) :]
    samples: list[float] = []
    runs: list[list[float]] = []
    for _ in range(repeat):
        run = [seconds for seconds, _ in applies(load(), messages, chosen, kept)]
        samples.extend(run)
        runs.append(run)
    # What happened at each step (an untimed pass with a fresh policy): window events.
    events = [result.report.window_events for _, result in applies(load(), messages, chosen, kept)]
    return samples, runs, events


def applies(
    policy: ctxwin.Policy, messages: list[dict[str, Any]], chosen: list[int], kept: bool
) -> list[tuple[float, ctxwin.Result]]:
    """The history up to ``chosen[0]`` applied (cold, untimed), then each later point: the
    time of each apply and its result (with ``kept``, each request the last output plus the
    new messages; else the history up to the point)."""
    sent = policy.apply(request_body(messages[: chosen[0]])).request["messages"]
    out = []
    for before, t in itertools.pairwise(chosen):
        body = request_body([*sent, *messages[before:t]] if kept else messages[:t])
        t0 = time.perf_counter()
        result = policy.apply(body)
        out.append((time.perf_counter() - t0, result))
        sent = result.request["messages"]
    return out


def cold(
    messages: list[dict[str, Any]], repeat: int, engine: str = "auto"
) -> tuple[list[float], list[float]]:
    request = request_body(messages)
    text = all_text(messages)
    enc = ctxwin.tokens.counters._encoding("o200k_base", None)
    assert enc is not None, "o200k_base is not available offline"
    applies: list[float] = []
    encodes: list[float] = []
    for _ in range(repeat):
        counter = ctxwin.TiktokenCounter("o200k_base", engine=engine)  # type: ignore[arg-type]
        policy = load(counter=counter)
        gc.collect()
        t0 = time.perf_counter()
        policy.apply(request)
        applies.append(time.perf_counter() - t0)
        gc.collect()
        t0 = time.perf_counter()
        enc.encode_ordinary(text)  # type: ignore[attr-defined]
        encodes.append(time.perf_counter() - t0)
    return applies, encodes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--rounds", type=int, default=434, help="rounds in the history (434: ~1,000 messages)"
    )
    ap.add_argument("--result-chars", type=int, default=1700, help="characters per tool result")
    ap.add_argument("--content", choices=["code", "words"], default="code")
    ap.add_argument("--steps", type=int, default=40, help="consecutive rounds timed (a)")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions of (a) and (b)")
    ap.add_argument(
        "--kept",
        action="store_true",
        help="(a) with the client keeping ctxwin's output as its history",
    )
    ap.add_argument("--recall", action="store_true", help="recall on (originals kept)")
    ap.add_argument("--store", default="memory", help="the store with --recall (a URL)")
    ap.add_argument(
        "--breakpoints",
        choices=["keep", "auto"],
        default="keep",
        help="the policy's cache_breakpoints (auto: placed in every request)",
    )
    ap.add_argument(
        "--model", default=None, help="the bodies' model (gpt-5.6 with --breakpoints auto)"
    )
    ap.add_argument(
        "--detect", action="store_true", help="no format= given: each apply detects the format"
    )
    args = ap.parse_args(argv)
    model = args.model or ("gpt-5.6" if args.breakpoints == "auto" else None)
    STORE.update(
        recall=args.recall,
        store=args.store,
        breakpoints=args.breakpoints,
        model=model,
        detect=args.detect,
    )

    messages = coding_history(args.rounds, result_chars=args.result_chars, content=args.content)
    policy = load()
    full = policy.apply(request_body(messages))
    rep = full.report
    print(f"machine : {machine()}")
    print(
        f"counter : {policy.counter.name} (engine {policy.counter.inner.engine}, "  # type: ignore[attr-defined]
        f"exact={policy.counter.exact}); tiktoken {_version('tiktoken')}"
    )
    print(f"policy  : {POLICY.relative_to(REPO)} (context_window {policy.config.context_window})")
    if args.detect:
        print("format  : not given: detected from the body at every apply")
    if args.recall:
        handles = len(set(re.findall(r"\br-[0-9a-f]{16}\b", json.dumps(full.request))))
        print(f"recall  : on, store {policy.shelf.url}, {handles} handles in the last request")
    if model is not None or args.breakpoints != "keep":
        marks = [m for m, _ in rep.breakpoints]
        print(f"model   : {model}; cache_breakpoints: {args.breakpoints} (placed at {marks})")
    print(
        f"history : {len(messages)} messages, {args.rounds} rounds, {rep.tokens_before:,} tokens "
        f"({len(all_text(messages)):,} chars, content={args.content}); after the policy: "
        f"{rep.tokens_after:,} tokens, {rep.window_events} window events"
    )
    print()

    samples, runs, new_events = steady(messages, args.steps, args.repeat, args.kept)
    runs_label = f"{args.steps} rounds x {args.repeat} runs"
    if args.kept:
        runs_label += ", each request the last output plus the new round"
    print(f"(a) steady state: append one round, apply again ({runs_label})")
    print(f"    {'':24s}{'median':>9s}{'p90':>9s}{'max':>9s}   (ms)")
    for label, values in [("all samples", samples)] + [
        (f"run {i + 1}", run) for i, run in enumerate(runs)
    ]:
        med, p90, top = statistics.median(values), pct(values, 0.9), max(values)
        print(f"    {label:24s}{ms(med)} {ms(p90)} {ms(top)}")
    fired = [i for i, n in enumerate(new_events) if n]  # the step after each new batch
    if fired:
        at = ", ".join(
            f"step {i + 1}: {ms(statistics.median([r[i] for r in runs])).strip()} ms" for i in fired
        )
        print(f"    steps where the window cleared a new batch (median over runs): {at}")
    else:
        print("    the window cleared no new batch during these rounds")
    verdict = "met" if statistics.median(samples) <= 0.001 else "MISSED"
    print(f"    target median <= 1 ms: {verdict}")
    print()

    print(
        "(b) cold: first apply of a fresh policy vs one tiktoken encode_ordinary of all text "
        f"({args.repeat} runs)"
    )
    print(f"    {'':42s}{'min':>9s}{'median':>9s}   (ms)")
    for engine in ("auto", "tiktoken"):
        applies, encodes = cold(messages, args.repeat, engine)
        ratio_med = statistics.median(applies) / statistics.median(encodes)
        ratio_min = min(applies) / min(encodes)
        label = f"first apply, counter engine={engine}"
        if engine == "auto":
            label += f" ({policy.counter.inner.engine})"  # type: ignore[attr-defined]
        print(f"    {label:42s}{ms(min(applies))} {ms(statistics.median(applies))}")
        enc_label = "  tiktoken encode_ordinary (same runs)"
        print(f"    {enc_label:42s}{ms(min(encodes))} {ms(statistics.median(encodes))}")
        if engine == "auto":  # the target is the engine ctxwin picks
            verdict = "met" if ratio_med <= 1.2 else "MISSED"
            note = f"target <= 1.2x (median): {verdict}"
        else:
            note = "no target: the Python overhead of an apply beyond tokenizing"
        print(f"    {'  ratio apply/encode':42s}{ratio_min:8.2f}x {ratio_med:7.2f}x   {note}")
    return 0


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
