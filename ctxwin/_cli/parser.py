"""The ``ctxwin`` command line's argument parser: commands, options, help and exit codes."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

from ctxwin._core.model import FORMATS

__all__ = ["EXIT_STATUS", "build_parser"]

EXIT_STATUS = """exit status:
  0    success
  1    problems found (see each command)
  2    bad usage or unreadable input: missing file, invalid JSON, unknown
       format, invalid policy, empty input, an output that cannot be written
  130  interrupted (Ctrl-C)"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _format_name(value: str) -> str:
    if value not in FORMATS:
        raise argparse.ArgumentTypeError(
            f"unknown format {value!r}; expected one of: {', '.join(FORMATS)}"
        )
    return value


def _width(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 40:
        raise argparse.ArgumentTypeError(f"must be at least 40, not {n}")
    return n


def _count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {n}")
    return n


def _fraction(value: str) -> float:
    """A fraction from 0 to below 1 (``--holdout``)."""
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 <= f < 1:  # nan too
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, not {value}")
    return f


_Sub: TypeAlias = "argparse._SubParsersAction[Any]"
"""The subcommands of the parser (argparse's own type)."""


@dataclass(frozen=True)
class _Shared:
    """Option groups several commands share (argparse parent parsers)."""

    common: argparse.ArgumentParser
    fmt: argparse.ArgumentParser
    policy: argparse.ArgumentParser
    verbose: argparse.ArgumentParser
    progress: argparse.ArgumentParser
    rendering: argparse.ArgumentParser


def _shared() -> _Shared:
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )
    fmt = _Parser(add_help=False)
    fmt.add_argument(
        "--format",
        type=_format_name,
        metavar="FORMAT",
        help=f"the wire format of the requests, instead of detecting it ({', '.join(FORMATS)})",
    )
    policy = _Parser(add_help=False)
    policy.add_argument(
        "--policy",
        "-p",
        required=True,
        metavar="P",
        help="a policy folder of YAML files, or one YAML file",
    )
    policy.add_argument(
        "--store",
        metavar="URL",
        help="where recall originals live (memory, sqlite:///path.db, redis://host:port/db); "
        "default: the policy's store: if it names one, else $CTXWIN_STORE, else "
        "sqlite:///~/.cache/ctxwin/store.db",
    )
    _follow_symlinks(policy)
    verbose = _Parser(add_help=False)
    verbose.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="log each edit on stderr as it is made (the 'ctxwin' logger)",
    )
    progress = _Parser(add_help=False)
    progress.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (one is drawn on stderr for long multi-file runs, on a terminal)",
    )
    rendering = _Parser(add_help=False)
    how = rendering.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="JSON (versioned schema)")
    how.add_argument("--markdown", action="store_true", help="GitHub-flavoured Markdown")
    rendering.add_argument(
        "--width", type=_width, default=100, metavar="N", help="text width (default: 100)"
    )
    return _Shared(common, fmt, policy, verbose, progress, rendering)


def _output(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "-o", "--output", metavar="OUT", help=f"write {what} to OUT ('-' or none: stdout)"
    )


def _add_apply(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "apply",
        help="write a request edited by a policy",
        description="Apply a policy to a request and write the edited request (JSON; JSONL "
        "in, JSONL out). REQUEST '-' reads stdin.",
        epilog="exit status: 0 done, 1 over the context window under 'overflow: error', "
        "2 bad usage or unreadable input",
        parents=[sh.common, sh.fmt, sh.policy, sh.verbose],
    )
    p.add_argument("request", metavar="REQUEST", help="a request file (.json or .jsonl), or '-'")
    _output(p, "the edited request")
    p.add_argument("--compact", action="store_true", help="one line of JSON, not indented")
    p.add_argument("--report", action="store_true", help="also print the token report on stderr")
    _server_state(p)
    p.add_argument("--width", type=_width, default=100, metavar="N", help=argparse.SUPPRESS)
    p.set_defaults(run="cmd_apply")


def _add_report(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "report",
        help="where the tokens go and what the policy saves",
        description="The token report of a policy applied to requests: per tool, per round, "
        "per edit, against the context window; per file and in total. REQUEST is a request "
        "file, a JSONL file (one request per line), a folder (its *.json and *.jsonl files, "
        "recursively) or '-'.",
        epilog="exit status: 0 done, 2 bad usage or unreadable input",
        parents=[sh.common, sh.fmt, sh.policy, sh.rendering, sh.progress, sh.verbose],
    )
    p.add_argument("requests", nargs="+", metavar="REQUEST")
    _output(p, "the report")
    p.add_argument(
        "--detail", action="store_true", help="with several requests, also each one's report"
    )
    p.add_argument(
        "--max-edits",
        type=_count,
        default=20,
        metavar="N",
        help="edits listed before the rest are summed up in one line (default: 20)",
    )
    p.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write one request's bars per tool and for its biggest rounds (as the "
        "table lists them) as a self-contained page",
    )
    _server_state(p)
    p.set_defaults(run="cmd_report")


def _add_check(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "check",
        help="tool-call pairing problems a provider would reject",
        description="List the pairing problems of requests (results missing, misplaced, "
        "orphaned, duplicated...), each with its request and JSON path.",
        epilog="exit status: 0 when no request has an error (warnings, such as empty results, "
        "are printed but do not fail the check), 1 when any request has an error-severity "
        "problem, 2 bad usage or unreadable input",
        parents=[sh.common, sh.fmt, sh.progress],
    )
    p.add_argument("requests", nargs="+", metavar="REQUEST", help="files, folders, JSONL, '-'")
    p.add_argument("--json", action="store_true", help="the problems as JSON")
    _server_state(p)
    p.set_defaults(run="cmd_check")


def _server_state(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server-state",
        action="store_true",
        help="earlier turns live on the provider's side (a Responses input whose calls are in "
        "the server's conversation): a result whose call is absent is no problem",
    )


def _add_repair(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "repair",
        help="write a request with its pairing repaired",
        description="Repair a request's tool-call pairing minimally and write it; each fix "
        "is listed on stderr.",
        epilog="exit status: 0 done (repaired or nothing to repair), 1 problems found with "
        "--strict (nothing written), 2 bad usage or unreadable input",
        parents=[sh.common, sh.fmt],
    )
    p.add_argument("request", metavar="REQUEST", help="a request file (.json or .jsonl), or '-'")
    _output(p, "the repaired request")
    p.add_argument(
        "--strict", action="store_true", help="list the problems and fail instead of repairing"
    )
    p.add_argument(
        "--normalize",
        action="store_true",
        help="also put results in call order and fill empty results (providers accept both)",
    )
    _server_state(p)
    p.add_argument("--compact", action="store_true", help="one line of JSON, not indented")
    p.set_defaults(run="cmd_repair")


def _add_lint(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "lint",
        help="validate policy files",
        description="Validate a policy (a folder of YAML files, or one file): every error is\n"
        "printed as 'file:line: message'.",
        epilog="exit status: 0 valid, 1 errors found, 2 bad usage or no such policy",
        parents=[sh.common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("policy", metavar="POLICY")
    _follow_symlinks(p)
    p.set_defaults(run="cmd_lint")


def _follow_symlinks(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="read the files of the policy folder that link outside it (refused by default)",
    )


def _add_schema(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "schema",
        help="the JSON Schema of policy files",
        description="Print the JSON Schema of policy files (for editors and CI).",
        epilog="exit status: 0 done, 2 bad usage or an output file that cannot be written",
        parents=[sh.common],
    )
    _output(p, "the schema")
    p.set_defaults(run="cmd_schema")


def _add_replay(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "replay",
        help="replay traces request by request, unmanaged and managed",
        description="Replay each trace as the requests an agent sends (before each model "
        "turn), unmanaged and under the policy: input and cached tokens, effective cost, "
        "peak request, pairing problems; per trace and summed, with managed/unmanaged ratios.",
        epilog="exit status: 0 done, 1 when a managed request has pairing problems or is over "
        "the context window under 'overflow: error', 2 bad usage or unreadable input (with "
        "--keep-going, after the traces that could be replayed), 130 interrupted",
        parents=[sh.common, sh.fmt, sh.policy, sh.rendering, sh.progress, sh.verbose],
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="files, folders, JSONL, '-'")
    p.add_argument(
        "--pricing",
        metavar="PRESET",
        help="price the cache with this preset (anthropic, openai, openai-4o, ...) instead of "
        "the policy's pricing",
    )
    _keep_going(p)
    p.add_argument(
        "--optimum",
        action="store_true",
        help="also compute the clairvoyant optimum of the policy's family, and cost x optimum",
    )
    _server_state(p)
    p.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write a self-contained HTML report (inline SVG charts per request)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        help="replay traces in N worker processes (default: one per CPU; 1: in this process); "
        "the results are the same, in input order",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress bar on stderr even when it is not a terminal",
    )
    _output(p, "the results")
    p.set_defaults(run="cmd_replay")


def _keep_going(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--keep-going",
        "-k",
        action="store_true",
        help="go on with the other traces when one cannot be read or replayed (each skipped "
        "one named on stderr, the exit status still set by it) instead of stopping",
    )


def _add_tune(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "tune",
        help="search the policy's open settings for the lowest replayed cost",
        description="Vary keep_rounds, the trigger/target ceiling, the window strategy, "
        "max_overrun, overrun_grace, drop_target, clear_reasoning (on traces with reasoning "
        "items) and the default cap, one at a time, keeping what lowers the replayed effective "
        "cost of the training traces with every request within the context window (a trace "
        "no setting fits held to its current peak); a held-out "
        "part of the traces is never searched on, and both parts are reported. Prints the "
        "tuned settings as a YAML diff.",
        epilog="exit status: 0 done, 1 when a request of the current policy is over the "
        "context window under 'overflow: error', 2 bad usage or unreadable input (with "
        "--keep-going, after tuning on the traces that could be replayed), 130 interrupted",
        parents=[sh.common, sh.fmt, sh.policy, sh.progress, sh.verbose],
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="files, folders, JSONL, '-'")
    p.add_argument("--pricing", metavar="PRESET", help="price the cache with this preset")
    _keep_going(p)
    p.add_argument(
        "--holdout",
        type=_fraction,
        default=0.25,
        metavar="FRACTION",
        help="fraction of the traces held out of the search and reported apart (default 0.25)",
    )
    _output(p, "the result")
    p.set_defaults(run="cmd_tune")


def _add_recall(sub: _Sub, sh: _Shared) -> None:
    p = sub.add_parser(
        "recall",
        help="print the original of a result a policy shortened (recall: true)",
        description="Print what the recall tool answers for HANDLE (r-...): the original "
        "content exactly, or the lines asked for, from the policy's store.",
        epilog="exit status: 0 found, 1 unknown handle or the store unavailable, 2 bad usage",
        parents=[sh.common, sh.policy],
    )
    p.add_argument("handle", metavar="HANDLE", help="a handle quoted by a placeholder or notice")
    p.add_argument("--lines", metavar="A-B", help="only these lines (1-based, inclusive)")
    p.add_argument("--grep", metavar="REGEX", help="only the lines matching, as N:line")
    p.set_defaults(run="cmd_recall", format=None)


def build_parser() -> argparse.ArgumentParser:
    from ctxwin._version import __version__

    sh = _shared()
    parser = _Parser(
        prog="ctxwin",
        description="Manage the context window of tool-calling LLM agents: apply a policy to\n"
        "request bodies, report where the tokens go, check and repair tool-call pairing.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[sh.common],
    )
    parser.add_argument("--version", action="version", version=f"ctxwin {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _add_apply(sub, sh)
    _add_report(sub, sh)
    _add_check(sub, sh)
    _add_repair(sub, sh)
    _add_lint(sub, sh)
    _add_schema(sub, sh)
    _add_replay(sub, sh)
    _add_tune(sub, sh)
    _add_recall(sub, sh)
    return parser
