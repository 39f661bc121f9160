"""The work of each ``ctxwin`` command; ``parser.py`` parses the arguments.

Each command takes the parsed arguments and returns the exit status: 0 success, 1 problems
found, 2 bad usage or unreadable input (raised as :class:`~ctxwin._cli.io.CliError`).
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ctxwin._cli.io import (
    CliError,
    Progress,
    Request,
    check_writable,
    dump_json,
    format_error,
    iter_requests,
    policy_error,
    policy_error_line,
    read_requests,
    to_stderr,
    write_text,
)
from ctxwin._core.records import Problem
from ctxwin._engine import Policy, Result, load_policy
from ctxwin._entry import unsummarized_note
from ctxwin._exceptions import (
    BudgetExceeded,
    CtxwinError,
    FormatError,
    InputError,
    PairingError,
    PolicyError,
    PolicyErrors,
    PolicyWarning,
)
from ctxwin._feedback.limits import DEFAULT_WINDOW
from ctxwin._policy.compile import validate_config
from ctxwin._policy.load import is_policy_file
from ctxwin._policy.schema import json_schema
from ctxwin._report.as_json import reports_json
from ctxwin._report.data import SCHEMA_VERSION
from ctxwin._report.markdown import report_markdown, reports_markdown
from ctxwin._report.report import Report
from ctxwin._report.tables import many
from ctxwin._report.text import report_text, reports_text
from ctxwin._validate import check, repair
from ctxwin.formats import detect
from ctxwin.steps._grep import not_a_pattern


def _err(text: str) -> None:
    to_stderr(text + "\n")


@contextmanager
def _about(name: str, *, server_state: bool = False) -> Iterator[None]:
    """Turn what goes wrong with one request into one line naming it (``server_state``: the
    command takes ``--server-state``, which the advice to send a server's state names)."""
    try:
        yield
    except (CliError, BudgetExceeded, PolicyError):
        raise
    except FormatError as e:
        raise format_error(name, e) from e
    except InputError as e:
        at = f"{name}: {e.path}" if e.path else name
        reason = e.reason
        if server_state:  # said in the command line's words
            reason = reason.replace(
                "send previous_response_id or conversation", "pass --server-state"
            )
        raise CliError(f"{at}: {reason}") from e
    except CtxwinError as e:
        raise CliError(f"{name}: {str(e).splitlines()[0]}") from e
    except RecursionError as e:
        raise CliError(f"{name}: the request is nested too deeply to read") from e
    except Exception as e:
        raise CliError(
            f"{name}: unexpected {type(e).__name__}: {e} (run with --debug for the traceback)"
        ) from e


@dataclass(frozen=True, slots=True)
class PolicyArgs:
    """What a command loads its policy from: ``--policy``, ``--format``,
    ``--follow-symlinks``, ``--store`` (read once: replay's worker processes are given the
    policy loaded, not the path), and whether the command reads the store whatever the
    policy says (``ctxwin recall``)."""

    source: str
    format: str | None
    follow_symlinks: bool = False
    store: str | None = None
    reads_store: bool = False

    @classmethod
    def of(cls, args: argparse.Namespace) -> PolicyArgs:
        return cls(
            args.policy,
            args.format,
            getattr(args, "follow_symlinks", False),
            getattr(args, "store", None),
            getattr(args, "command", None) == "recall",
        )

    def load(self) -> Policy:
        """The policy, as the command gave it (a summarize rule is said by the caller)."""
        source = self.source
        _policy_at(source)
        try:
            with warnings.catch_warnings():  # said in the command line's words
                warnings.filterwarnings("ignore", ".*the summarize rules of", PolicyWarning)
                policy = load_policy(
                    source, format=self.format, follow_symlinks=self.follow_symlinks
                )
            store = cli_store(policy, self.store, reads_store=self.reads_store)
            if store is not None:
                policy = Policy(policy.compiled, format=self.format, store=store)
        except PolicyError as e:
            raise policy_error(e, source) from e
        return policy


def _policy(args: argparse.Namespace) -> Policy:
    source: str = args.policy
    policy = PolicyArgs.of(args).load()
    if any(t.rules.summarize is not None for t in policy.compiled.tools):
        _err(
            f"ctxwin: warning: {source}: summarize rules are not run (the command line has no "
            "summarizer): results over over_tokens are capped instead, at the tool's "
            "max_tokens, else summarize.max_tokens"
        )
    return policy


def cli_store(policy: Policy, given: str | None, *, reads_store: bool = False) -> str | None:
    """The store of a command: ``--store``, else the policy's when it names one, else
    ``$CTXWIN_STORE``, else a SQLite file in the user's cache (so that ``ctxwin recall``
    finds what ``ctxwin apply`` kept).

    With no home directory to put that file in (no ``$HOME`` and a uid with no passwd
    entry: a container run as any uid), a policy that never opens its store (no recall,
    and the command line runs no summarizer) keeps its own; a command that needs the store
    (a policy that recalls, or ``reads_store``: ``ctxwin recall``) is told what to set."""
    if given is not None:
        return _store_url(given, "--store")
    if "store" in policy.config.model_fields_set:
        return None
    env = os.environ.get("CTXWIN_STORE")
    if env:
        return _store_url(env, "$CTXWIN_STORE")
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        try:
            cache = str(Path.home() / ".cache")
        except RuntimeError as e:  # Path.home(): "Could not determine home directory"
            if not (reads_store or policy.recall_enabled):
                return None
            raise CliError(_NO_HOME) from e
    return f"sqlite:///{Path(cache) / 'ctxwin' / 'store.db'}"


_NO_HOME = (
    "no home directory for the default store (~/.cache/ctxwin/store.db): give --store, "
    "or set $CTXWIN_STORE, $XDG_CACHE_HOME or $HOME"
)


def _store_url(url: str, origin: str) -> str:
    """``url`` when a store takes it; else the error names where it came from (not the
    policy, which did not say it)."""
    try:
        validate_config({"store": url})
    except PolicyError as e:
        raise CliError(f"{origin}: {e.reason}") from e
    return url


def cmd_recall(args: argparse.Namespace) -> int:
    policy = _policy(args)
    answer = policy.recall(args.handle, args.lines, args.grep)
    if answer.is_error:
        raise CliError(answer.text.removeprefix("recall: "), code=_recall_status(policy, args))
    write_text(answer.text, None)
    return 0


def _recall_status(policy: Policy, args: argparse.Namespace) -> int:
    """The exit status of a recall answered with an error: 2 (bad usage) when the original
    is there but ``--lines`` names no range of it or ``--grep`` is no regular expression;
    else 1 (an unknown handle, the store down, a pattern that ran too long)."""
    if policy.recall(args.handle).is_error:
        return 1
    if args.lines is not None and policy.recall(args.handle, args.lines).is_error:
        return 2
    return 2 if not_a_pattern(args.grep or "") is not None else 1


def _server_state(args: argparse.Namespace) -> bool | None:
    """``--server-state``: True; else None (the body says, by its own keys)."""
    return True if args.server_state else None


def _progress(args: argparse.Namespace) -> Progress:
    return Progress(f"ctxwin {args.command}", enabled=not args.no_progress)


# ------------------------------------------------------------------------------ apply


def cmd_apply(args: argparse.Namespace) -> int:
    check_writable(args.output)
    policy = _policy(args)
    requests = read_requests(args.request)
    outputs: list[object] = []
    said = {unsummarized_note(policy.compiled)}  # said once, as the policy loaded
    for req in requests:
        with _about(req.name, server_state=True):
            try:
                result: Result = policy.apply(
                    req.body, format=args.format, server_state=_server_state(args)
                )
            except BudgetExceeded as e:
                raise CliError(f"{req.name}: {e}", code=1) from e
        outputs.append(result.request)
        if args.report:
            _err(report_text(result.report, args.width, title=req.name).rstrip("\n"))
        else:  # the report lists them; without it, what the user must know is still said
            _warn_of(req.name, result, said)
    write_text(_bodies(requests, outputs, args.compact), args.output)
    return 0


def _warn_of(name: str, result: Result, said: set[str | None]) -> None:
    """Without ``--report``: each repair (as ``repair`` says it), and the report's notes not
    ``said`` before (once for all the requests of a file): a model without a profile, a
    recall store that failed (results shortened without a handle ``ctxwin recall`` could
    find)..."""
    for fix in result.fixes:
        _err(f"{name}: {fix}")
    for note in result.report.notes:
        if note not in said:
            said.add(note)
            _err(f"ctxwin: warning: {name}: {note}")


def _bodies(requests: list[Request], bodies: list[object], compact: bool) -> str:
    """One JSON document, or JSONL (one compact line each) when the input was JSONL; the
    numbers a float cannot hold exactly as they came."""
    if len(requests) == 1 and not requests[0].jsonl:
        return dump_json(bodies[0], compact=compact, numbers=requests[0].numbers)
    return "".join(
        dump_json(b, compact=True, numbers=r.numbers) for r, b in zip(requests, bodies, strict=True)
    )


# ------------------------------------------------------------------------------ report


def cmd_report(args: argparse.Namespace) -> int:
    check_writable(args.output, args.html)
    policy = _policy(args)
    items: list[tuple[str, Report]] = []
    with _progress(args) as progress:
        for req in iter_requests(args.requests, progress):
            with _about(req.name, server_state=True):
                try:
                    state = _server_state(args)
                    report = policy.apply(req.body, format=args.format, server_state=state).report
                except BudgetExceeded as e:  # overflow: error; the report says by how much
                    if e.report is None:
                        raise
                    report = e.report
            items.append((req.name, report))
    if args.html and len(items) != 1:  # said before the report is written, not after
        raise CliError(f"--html draws one request; {len(items)} were given")
    if args.json:
        text = reports_json(items)
    elif len(items) == 1:
        name, report = items[0]
        if args.markdown:
            text = report_markdown(report, title=name, max_edits=args.max_edits)
        else:
            text = report_text(report, args.width, title=name, max_edits=args.max_edits)
    elif args.markdown:
        text = reports_markdown(items, detail=args.detail, max_edits=args.max_edits)
    else:
        text = reports_text(items, args.width, detail=args.detail, max_edits=args.max_edits)
    write_text(text, args.output)
    if args.html:
        from ctxwin._report.html import report_html

        write_text(report_html(items[0][1], title=items[0][0]), args.html)
    return 0


# ------------------------------------------------------------------------------ check


def _problem_line(name: str, p: Problem) -> str:
    cid = f" [{p.call_id}]" if p.call_id else ""
    return f"{name}: {p.path}: {p.severity}: {p.code}{cid}: {p.message}"


def cmd_check(args: argparse.Namespace) -> int:
    found: list[tuple[str, str, list[Problem]]] = []
    with _progress(args) as progress:
        for req in iter_requests(args.requests, progress):
            with _about(req.name):
                fmt = args.format or detect(req.body)
                problems = check(req.body, fmt, warnings=True, server_state=_server_state(args))
            found.append((req.name, fmt, problems))
    errors = sum(p.severity == "error" for _, _, ps in found for p in ps)
    warnings = sum(p.severity == "warning" for _, _, ps in found for p in ps)
    if args.json:
        text = dump_json(
            {
                "version": SCHEMA_VERSION,
                "kind": "check",
                "requests": [
                    {"name": n, "format": f, "problems": [p.to_dict() for p in ps]}
                    for n, f, ps in found
                ],
                "errors": errors,
                "warnings": warnings,
            }
        )
    else:
        lines = [_problem_line(n, p) for n, _, ps in found for p in ps]
        n = len(found)
        summary = f"checked {many(n, 'request')}: "
        if errors or warnings:
            summary += f"{many(errors, 'error')}, {many(warnings, 'warning')}"
        else:
            summary += "no problems"
        text = "\n".join([*lines, summary]) + "\n"
    write_text(text, None)
    return 1 if errors else 0


# ------------------------------------------------------------------------------ repair


def cmd_repair(args: argparse.Namespace) -> int:
    check_writable(args.output)
    requests = read_requests(args.request)
    outputs: list[object] = []
    refused: list[str] = []
    n_fixes = 0
    for req in requests:
        with _about(req.name, server_state=True):
            try:
                body, fixes = repair(
                    req.body,
                    args.format,
                    strict=args.strict,
                    normalize=args.normalize,
                    server_state=_server_state(args),
                )
            except PairingError as e:
                refused.extend(_problem_line(req.name, p) for p in e.problems)
                continue
        outputs.append(body)
        n_fixes += len(fixes)
        for fix in fixes:
            _err(f"{req.name}: {fix}")
    if refused:
        for line in refused:
            _err(line)
        _err(f"ctxwin repair: {many(len(refused), 'pairing problem')} (--strict: nothing written)")
        return 1
    write_text(_bodies(requests, outputs, args.compact), args.output)
    _err(
        f"ctxwin repair: {many(n_fixes, 'fix', 'fixes')}"
        if n_fixes
        else "ctxwin repair: nothing to repair"
    )
    return 0


# ------------------------------------------------------------------------------ lint


def _policy_at(source: str, *, lint: bool = False) -> None:
    """A CliError (exit 2, not a policy's errors) where the command line names no policy:
    no such path, a name the file system refuses (too long...), and for ``lint`` a folder
    that cannot be listed or holds no policy file."""
    path = Path(source)
    try:
        if not path.exists():
            raise CliError(f"{source}: no such file or folder")
        if lint and path.is_dir() and not any(is_policy_file(p) for p in path.iterdir()):
            raise CliError(f"{source}: no .yaml files in this folder")
    except OSError as e:
        raise CliError(f"{source}: cannot read: {e.strerror or e}") from None


def cmd_lint(args: argparse.Namespace) -> int:
    source: str = args.policy
    _policy_at(source, lint=True)
    try:
        policy = load_policy(source, follow_symlinks=getattr(args, "follow_symlinks", False))
    except PolicyError as e:
        errors = list(e.errors) if isinstance(e, PolicyErrors) else [e]
        lines: list[str] = []
        for err in errors:
            lines.append(policy_error_line(err, source))
            if err.detail:
                lines.extend(err.detail.splitlines())
        write_text("\n".join(lines) + "\n", None)
        _err(f"ctxwin lint: {many(len(errors), 'error')} in {source}")
        return 1
    config = policy.config
    files = len(policy.compiled.sources) or 1
    rules = sum(1 for t in policy.compiled.tools if t.source != "<recall>")  # not the built-in
    write_text(
        f"{source}: ok ({many(files, 'file')}, {many(rules, 'tool rule')}, "
        f"context window {_window_said(config.context_window)}, "
        f"tokenizer {config.tokenizer})\n",
        None,
    )
    return 0


def _window_said(window: int | str) -> str:
    """``context_window`` as lint says it: a number of tokens, or ``auto`` and what it
    comes to (the request's model's window, known from its profile)."""
    if isinstance(window, int):
        return f"{window:,}"
    return f"auto (the request's model's; {DEFAULT_WINDOW:,} for a model without a profile)"


# ------------------------------------------------------------------------------ schema


def cmd_schema(args: argparse.Namespace) -> int:
    check_writable(args.output)
    write_text(dump_json(json_schema()), args.output)
    return 0


__all__ = [
    "PolicyArgs",
    "cmd_apply",
    "cmd_check",
    "cmd_lint",
    "cmd_recall",
    "cmd_repair",
    "cmd_report",
    "cmd_schema",
]
