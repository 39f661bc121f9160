"""The ``ctxwin`` command line (also ``python -m ctxwin``).

``main(argv)`` parses the arguments (``parser.py``), runs a command from ``commands.py`` and
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
from typing import TextIO

from ctxwin._cli.io import CliError, policy_error, to_stderr
from ctxwin._cli.parser import build_parser
from ctxwin._exceptions import CtxwinError, PolicyError, PolicyWarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    text = str(message)
    if not isinstance(message, PolicyWarning):  # a policy's comes with its caret line
        text = text.splitlines()[0] if text else category.__name__
    to_stderr(f"ctxwin: warning: {text}\n")


def _edit_log(args: argparse.Namespace) -> Callable[[], None]:
    """With ``--verbose``, print the ``ctxwin`` logger's edit records on stderr; without,
    none: an edit that fell back is logged as a warning, which Python would print on its
    own, where the command says it in its own words (the report's notes)."""
    logger = logging.getLogger("ctxwin")
    level = logger.level
    handler: logging.Handler
    if getattr(args, "verbose", False) and sys.stderr is not None:  # None: closed (2>&-)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()
    logger.addHandler(handler)

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
    from ctxwin._cli import commands, traces

    command: Callable[[argparse.Namespace], int] = getattr(
        traces if args.run in traces.__all__ else commands, args.run
    )
    with warnings.catch_warnings():
        if not sys.warnoptions:
            warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        undo = _edit_log(args)
        try:
            return command(args)
        except CliError as e:
            if debug and sys.stderr is not None:  # None: print_exc would write on stdout
                traceback.print_exc()
            to_stderr(f"ctxwin: error: {e}\n")
            return e.code
        except PolicyError as e:
            if debug and sys.stderr is not None:  # None: print_exc would write on stdout
                traceback.print_exc()
            to_stderr(f"ctxwin: error: {policy_error(e, e.file or '<policy>')}\n")
            return 2
        except CtxwinError as e:
            if debug and sys.stderr is not None:  # None: print_exc would write on stdout
                traceback.print_exc()
            to_stderr(f"ctxwin: error: {str(e).splitlines()[0]}\n")
            return 2
        except KeyboardInterrupt:
            to_stderr("ctxwin: interrupted\n")
            return 130
        except BrokenPipeError:
            _silence_stdout()
            return 1
        except Exception as e:
            if debug and sys.stderr is not None:  # None: print_exc would write on stdout
                traceback.print_exc()
            to_stderr(
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
