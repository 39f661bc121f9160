"""The commands that replay traces: ``ctxwin replay`` and ``ctxwin tune``.

Both read many traces, replay each request by request (:mod:`ctxwin.replay`), and with
``--keep-going`` go on past a trace that cannot be read or replayed, naming it on stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxwin._cli.commands import PolicyArgs, _about, _err, _policy, _progress, cli_store
from ctxwin._cli.io import (
    CliError,
    Progress,
    Request,
    check_writable,
    expand,
    iter_requests,
    read_requests,
    write_text,
)
from ctxwin._engine import Policy
from ctxwin._exceptions import BudgetExceeded, PolicyWarning
from ctxwin._policy.compile import CompiledPolicy
from ctxwin._report.replay import replay_json, replay_markdown, replay_text
from ctxwin._report.tables import many

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from ctxwin.replay import ReplayResult

__all__ = ["cmd_replay", "cmd_tune"]


# ------------------------------------------------------------------------------- tune


def _tune_line(label: str, f: object) -> str:
    from ctxwin.tune import Figures

    assert isinstance(f, Figures)
    at = f" in {f.peak_trace}" if f.traces > 1 and f.peak_trace else ""  # nearest its window
    line = (
        f"  {label:<22} {many(f.traces, 'trace'):>10}  cost {f.ratio:.3f}x unmanaged  "
        f"peak {f.peak:,} / window {f.window:,}{at}  problems {f.problems}"
    )
    if f.over:
        line += f"  over the window on {many(f.over, 'trace')} (overflow: error; not in the cost)"
    return line


def cmd_tune(args: argparse.Namespace) -> int:
    from ctxwin.tune import tune

    _check_pricing(args.pricing)
    check_writable(args.output)
    policy = _policy(args)
    failed: list[CliError] | None = [] if args.keep_going else None
    options = _ReplayOptions(args.format, args.pricing, False)
    traces: list[tuple[str, object]] = []
    with _progress(args) as progress:
        requests = _read_traces(args.traces, failed)
        progress.start(len(requests))
        for req in requests:  # each replayed once first, so that a failure names its trace
            try:
                _replay_one(policy, req, options)
                traces.append((req.name, req.body))
            except CliError as error:
                if failed is None:
                    raise
                failed.append(error)
            progress.advance(req.name)
    if failed:
        _skipped(failed, "tune", left=bool(traces))
    with _progress(args) as progress:  # the search: each setting replayed on the traces
        result = tune(
            traces,
            policy,
            format=args.format,
            pricing=args.pricing,
            holdout=args.holdout,
            progress=progress,
        )
    lines = [
        f"ctxwin tune: {many(result.trials, 'setting')} replayed on "
        f"{many(len(result.train), 'training trace')}; {len(result.holdout)} held out",
        "",
        result.diff().rstrip("\n"),
        "",
        "training traces:",
        _tune_line("current", result.current_train),
        _tune_line("tuned", result.best_train),
    ]
    if result.current_holdout is not None and result.best_holdout is not None:
        lines += [
            "held-out traces (never searched on):",
            _tune_line("current", result.current_holdout),
            _tune_line("tuned", result.best_holdout),
        ]
    else:
        lines.append("no held-out traces: the tuned figures are on the traces it was tuned on")
    write_text("\n".join(lines) + "\n", args.output)
    return max([0, *(e.code for e in failed or ())])


# ------------------------------------------------------------------------------ replay


def cmd_replay(args: argparse.Namespace) -> int:
    _check_pricing(args.pricing)
    check_writable(args.output, args.html)
    policy = _policy(args)
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise CliError(f"--jobs {jobs}: give 1 (in this process) or more worker processes")
    failed: list[CliError] | None = [] if args.keep_going else None
    requests = _read_traces(args.traces, failed)
    options = _ReplayOptions(
        args.format, args.pricing, args.optimum, True if args.server_state else None, True
    )
    progress = Progress(f"ctxwin {args.command}", enabled=not args.no_progress, force=args.progress)
    with progress:
        progress.start(len(requests))
        if jobs == 1 or len(requests) < 2:
            results = []
            for req in requests:
                try:
                    results.append(_replay_one(policy, req, options))
                except CliError as error:
                    if failed is None:
                        raise
                    failed.append(error)
                progress.advance(req.name)
        else:
            results = _replay_pool(
                _Loaded.of(policy, args),
                requests,
                options,
                min(jobs, len(requests)),
                progress,
                failed,
            )
    if failed and not results:
        _skipped(failed, "replay", left=False)
    if args.json:
        text = replay_json(results)
    elif args.markdown:
        text = replay_markdown(results)
    else:
        text = replay_text(results, args.width)
    write_text(text, args.output)
    if args.html:
        from ctxwin._report.html import replay_html

        write_text(replay_html(results), args.html)
    bad = [r.name for r in results if r.managed.problems]
    if bad:
        _err(
            f"ctxwin replay: the managed requests of {', '.join(bad)} have pairing problems "
            "a provider would reject"
        )
    if failed:
        _skipped(failed, "replay", left=True)
    return max([1 if bad else 0, *(e.code for e in failed or ())])


def _check_pricing(name: str | None) -> None:
    from ctxwin._policy.tables import pricing_presets

    presets = pricing_presets()
    if name is not None and name not in presets:
        raise CliError(f"--pricing {name!r}: no such preset; known: {', '.join(sorted(presets))}")


def _skipped(failed: list[CliError], command: str, *, left: bool) -> None:
    """Name each trace ``--keep-going`` skipped; an error when none is ``left``."""
    for error in failed:
        _err(f"ctxwin {command}: skipped {error}")
    if not left:
        raise CliError(
            f"none of the {len(failed)} traces could be replayed", code=max(e.code for e in failed)
        )


def _read_traces(paths: list[str], failed: list[CliError] | None) -> list[Request]:
    """The requests of every trace; with ``failed`` (``--keep-going``), a file that cannot
    be read, or a line of JSONL that cannot, is added to it and the others read on."""
    if failed is None:
        return list(iter_requests(paths))
    out: list[Request] = []
    for path in expand(paths):
        try:
            out.extend(read_requests(path, failed=failed))
        except CliError as e:
            failed.append(e)
    return out


@dataclass(frozen=True, slots=True)
class _ReplayOptions:
    format: str | None
    pricing: str | None
    optimum: bool
    server_state: bool | None = None
    """``--server-state``: True; else None (the trace says, by its own keys)."""
    takes_server_state: bool = False
    """The command has ``--server-state`` (replay; tune has not), which errors advise."""


def _replay_one(policy: Policy, req: Request, options: _ReplayOptions) -> ReplayResult:
    from ctxwin.replay import replay

    with _about(req.name, server_state=options.takes_server_state):
        try:
            return replay(
                req.body,
                policy,
                format=options.format,
                name=req.name,
                pricing=options.pricing,
                optimum=options.optimum,
                server_state=options.server_state,
            )
        except BudgetExceeded as e:
            raise CliError(
                f"{req.name}: {e}; replay needs overflow: drop_oldest_rounds", code=1
            ) from e


@dataclass(frozen=True, slots=True)
class _Loaded:
    """The policy the command loaded, as its worker processes rebuild it: the compiled
    rules, never the path again (a pipe, ``-p <(...)`` or ``-p /dev/stdin``, is empty by
    then, and a file may have been edited: the workers replayed another policy)."""

    compiled: CompiledPolicy
    format: str | None
    store: str | None
    source: str

    @classmethod
    def of(cls, policy: Policy, args: argparse.Namespace) -> _Loaded:
        store = cli_store(policy, PolicyArgs.of(args).store)  # as the command's policy has it
        return cls(policy.compiled, args.format, store, args.policy)


_WORKER: dict[str, Policy | CliError] = {}
"""The policy of a replay worker process, built once by :func:`_worker_start` (or the
error that building it gave, said for each trace)."""


def _worker_start(loaded: _Loaded) -> None:
    # Ctrl-C reaches every process of the terminal's group: the command stops the workers
    # and says it once, with no traceback from each of them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with warnings.catch_warnings():  # the command showed the policy's warnings once
            warnings.simplefilter("ignore", PolicyWarning)
            _WORKER["policy"] = Policy(loaded.compiled, format=loaded.format, store=loaded.store)
    except Exception as e:  # an initializer that raises breaks the whole pool
        _WORKER["policy"] = CliError(f"{loaded.source}: {type(e).__name__}: {e}")


def _worker_replay(req: Request, options: _ReplayOptions) -> ReplayResult | tuple[str, int]:
    """One trace in a worker: its result, or the error line and exit status."""
    policy = _WORKER["policy"]
    try:
        if isinstance(policy, CliError):
            raise policy
        return _replay_one(policy, req, options)
    except CliError as e:
        return str(e), e.code


def _replay_pool(
    loaded: _Loaded,
    requests: list[Request],
    options: _ReplayOptions,
    jobs: int,
    progress: Progress,
    failed: list[CliError] | None = None,
) -> list[ReplayResult]:
    """Replay the traces in ``jobs`` worker processes; the results in input order, the
    first error (in input order) raised as the serial run would, or with ``failed``
    (``--keep-going``), every error added to it in input order. Interrupted (Ctrl-C), the
    workers are stopped at once, not left to finish every trace."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    out: list[ReplayResult | tuple[str, int] | None] = [None] * len(requests)
    pool = ProcessPoolExecutor(jobs, initializer=_worker_start, initargs=(loaded,))
    try:
        futures = {pool.submit(_worker_replay, req, options): i for i, req in enumerate(requests)}
        for f in as_completed(futures):
            i = futures[f]
            out[i] = f.result()
            progress.advance(requests[i].name)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()
    results: list[ReplayResult] = []
    for r in out:
        if isinstance(r, tuple):
            if failed is None:
                raise CliError(r[0], code=r[1])
            failed.append(CliError(r[0], code=r[1]))
            continue
        assert r is not None
        results.append(r)
    return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now, and reap them (no zombie, no trace left running)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if callable(terminate):
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(5)
