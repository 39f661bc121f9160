"""The ``ctxwin`` command line (also ``python -m ctxwin``).

``main(argv)`` parses the arguments, runs a command from :mod:`ctxwin._cli_commands` and
returns the exit status: 0 success, 1 problems found, 2 bad usage or unreadable input. Every
error is one line on stderr naming the file and the place in it; ``--debug`` adds the
traceback. The library never imports this module.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

from ctxwin._cli_io import CliError, policy_error
from ctxwin._exceptions import CtxwinError, PolicyError
from ctxwin._model import FORMATS

EXIT_STATUS = """exit status:
  0  success
  1  problems found (see each command)
  2  bad usage or unreadable input: missing file, invalid JSON, unknown format, invalid
     policy, empty input"""


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


def build_parser() -> argparse.ArgumentParser:
    from ctxwin import __version__

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

    def output(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "-o", "--output", metavar="OUT", help=f"write {what} to OUT ('-' or none: stdout)"
        )

    parser = _Parser(
        prog="ctxwin",
        description="Manage the context window of tool-calling LLM agents: apply a policy "
        "to request bodies, report where the tokens go, check and repair tool-call pairing.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"ctxwin {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    raw = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser(
        "apply",
        help="write a request edited by a policy",
        description="Apply a policy to a request and write the edited request (JSON; JSONL "
        "in, JSONL out). REQUEST '-' reads stdin.",
        epilog="exit status: 0 done, 1 over the context window under 'overflow: error', "
        "2 bad usage or unreadable input",
        parents=[common, fmt, policy, verbose],
    )
    p.add_argument("request", metavar="REQUEST", help="a request file (.json or .jsonl), or '-'")
    output(p, "the edited request")
    p.add_argument("--compact", action="store_true", help="one line of JSON, not indented")
    p.add_argument("--report", action="store_true", help="also print the token report on stderr")
    p.add_argument("--width", type=_width, default=100, metavar="N", help=argparse.SUPPRESS)
    p.set_defaults(run="cmd_apply")

    p = sub.add_parser(
        "report",
        help="where the tokens go and what the policy saves",
        description="The token report of a policy applied to requests: per tool, per round, "
        "per edit, against the context window; per file and in total. REQUEST is a request "
        "file, a JSONL file (one request per line), a folder (its *.json and *.jsonl files, "
        "recursively) or '-'.",
        epilog="exit status: 0 done, 2 bad usage or unreadable input",
        parents=[common, fmt, policy, rendering, progress, verbose],
    )
    p.add_argument("requests", nargs="+", metavar="REQUEST")
    output(p, "the report")
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
    p.set_defaults(run="cmd_report")

    p = sub.add_parser(
        "check",
        help="tool-call pairing problems a provider would reject",
        description="List the pairing problems of requests (results missing, misplaced, "
        "orphaned, duplicated...), each with its request and JSON path.",
        epilog="exit status: 0 when no request has an error (warnings, such as empty results, "
        "are printed but do not fail the check), 1 when any request has an error-severity "
        "problem, 2 bad usage or unreadable input",
        parents=[common, fmt, progress],
    )
    p.add_argument("requests", nargs="+", metavar="REQUEST", help="files, folders, JSONL, '-'")
    p.add_argument("--json", action="store_true", help="the problems as JSON")
    p.set_defaults(run="cmd_check")

    p = sub.add_parser(
        "repair",
        help="write a request with its pairing repaired",
        description="Repair a request's tool-call pairing minimally and write it; each fix "
        "is listed on stderr.",
        epilog="exit status: 0 done (repaired or nothing to repair), 1 problems found with "
        "--strict (nothing written), 2 bad usage or unreadable input",
        parents=[common, fmt],
    )
    p.add_argument("request", metavar="REQUEST", help="a request file (.json or .jsonl), or '-'")
    output(p, "the repaired request")
    p.add_argument(
        "--strict", action="store_true", help="list the problems and fail instead of repairing"
    )
    p.add_argument(
        "--normalize",
        action="store_true",
        help="also put results in call order and fill empty results (providers accept both)",
    )
    p.add_argument("--compact", action="store_true", help="one line of JSON, not indented")
    p.set_defaults(run="cmd_repair")

    p = sub.add_parser(
        "lint",
        help="validate policy files",
        description="Validate a policy (a folder of YAML files, or one file): every error is "
        "printed as 'file:line: message'.",
        epilog="exit status: 0 valid, 1 errors found, 2 bad usage or no such policy",
        parents=[common],
        formatter_class=raw,
    )
    p.add_argument("policy", metavar="POLICY")
    p.set_defaults(run="cmd_lint")

    p = sub.add_parser(
        "schema",
        help="the JSON Schema of policy files",
        description="Print the JSON Schema of policy files (for editors and CI).",
        parents=[common],
    )
    output(p, "the schema")
    p.set_defaults(run="cmd_schema")

    p = sub.add_parser(
        "replay",
        help="replay traces request by request, unmanaged and managed",
        description="Replay each trace as the requests an agent sends (before each model "
        "turn), unmanaged and under the policy: input and cached tokens, effective cost, "
        "peak request, pairing problems; per trace and summed, with managed/unmanaged ratios.",
        epilog="exit status: 0 done, 1 when a managed request has pairing problems, 2 bad usage "
        "or unreadable input",
        parents=[common, fmt, policy, rendering, progress, verbose],
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="files, folders, JSONL, '-'")
    output(p, "the results")
    p.set_defaults(run="cmd_replay")
    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    text = str(message).splitlines()[0] if str(message) else category.__name__
    sys.stderr.write(f"ctxwin: warning: {text}\n")


def _edit_log(args: argparse.Namespace) -> Callable[[], None]:
    """With ``--verbose``, print the ``ctxwin`` logger's edit records on stderr."""
    if not getattr(args, "verbose", False):
        return lambda: None
    logger = logging.getLogger("ctxwin")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def undo() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)

    return undo


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    debug = bool(getattr(args, "debug", False))
    from ctxwin import _cli_commands

    command: Callable[[argparse.Namespace], int] = getattr(_cli_commands, args.run)
    with warnings.catch_warnings():
        if not sys.warnoptions:
            warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        undo = _edit_log(args)
        try:
            return command(args)
        except CliError as e:
            if debug:
                traceback.print_exc()
            sys.stderr.write(f"ctxwin: error: {e}\n")
            return e.code
        except PolicyError as e:
            if debug:
                traceback.print_exc()
            sys.stderr.write(f"ctxwin: error: {policy_error(e, e.file or '<policy>')}\n")
            return 2
        except CtxwinError as e:
            if debug:
                traceback.print_exc()
            sys.stderr.write(f"ctxwin: error: {str(e).splitlines()[0]}\n")
            return 2
        except KeyboardInterrupt:
            sys.stderr.write("ctxwin: interrupted\n")
            return 130
        except BrokenPipeError:
            _silence_stdout()
            return 1
        except Exception as e:
            if debug:
                traceback.print_exc()
            sys.stderr.write(
                f"ctxwin: error: unexpected {type(e).__name__}: {e} "
                "(run with --debug for the traceback)\n"
            )
            return 2
        finally:
            undo()


def _silence_stdout() -> None:
    """After the reader of stdout went away (``| head``): no second error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["build_parser", "main"]
