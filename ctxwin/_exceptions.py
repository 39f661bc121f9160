"""Every error ctxwin raises, in one tree.

```
CtxwinError                      base of everything below
├── InputError                   the request you passed is not usable (a user mistake)
│   ├── FormatError              not a body of any known wire format, or ambiguous
│   └── PairingError             tool calls and results do not pair (strict repair)
├── PolicyError                  a policy file or object is invalid (a user mistake)
│   └── PolicyErrors             several PolicyError found while loading, all of them
├── SummarizerError              the summarizer cannot be used as configured, or its model
│                                call failed (ctxwin.summarizers)
└── BudgetExceeded               runtime: the request stays over the context window
```

Two warnings (``UserWarning``): :class:`PolicyWarning`, a policy that loads and works but
likely not as meant (something on its way out, a template field that cannot be filled, a
subfolder not read), located like a :class:`PolicyError`; :class:`CalibrationWarning`, a
provider's usage too far from ctxwin's count to be learned from.

Each error carries its location as attributes (``path``, ``line``, ``message_index``,
``call_id`` ...) as well as in its text, so callers can act on it without parsing strings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxwin._core.records import Problem
    from ctxwin._report.report import Report

__all__ = [
    "BudgetExceeded",
    "CalibrationWarning",
    "CtxwinError",
    "FormatError",
    "InputError",
    "PairingError",
    "PolicyError",
    "PolicyErrors",
    "PolicyWarning",
    "StoreError",
    "SummarizerError",
    "user_stacklevel",
]


class CtxwinError(Exception):
    """Base class of every error raised by ctxwin."""


class InputError(CtxwinError):
    """The request body (or list of messages) cannot be used as given."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)
        self.reason = message


class FormatError(InputError):
    """The body matches no known wire format, matches several, or is malformed for its format.

    ``path`` is a JSON path into the body (``messages[3].tool_calls[0]``) when the problem is
    located; ``candidates`` lists the formats that matched when detection was ambiguous.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        format: str | None = None,
        candidates: Sequence[str] = (),
    ) -> None:
        self.format = format
        self.candidates = tuple(candidates)
        super().__init__(message, path=path)


class PairingError(InputError):
    """Tool calls and their results do not pair; raised by ``repair(..., strict=True)``.

    ``problems`` holds every problem found, each with its location and call id.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        lines = [str(p) for p in self.problems]
        head = f"{len(lines):,} pairing problem{'s' if len(lines) != 1 else ''}"
        CtxwinError.__init__(self, head + ":\n" + "\n".join("  " + line for line in lines))
        self.path = None
        self.reason = head


class _InPolicy(Exception):
    """Where in a policy (file, line, key, column) a problem is, in its attributes and in its
    text: ``file:line: key: message`` and the detail below it; ``reason`` is the message."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        column: int | None = None,
        detail: str | None = None,
    ) -> None:
        self.file, self.line, self.key, self.column = file, line, key, column
        self.reason = message
        self.detail = detail
        where = file or "<policy>"
        if line is not None:
            where += f":{line}"
        text = f"{where}: {key + ': ' if key else ''}{message}"
        super().__init__(text + "\n" + detail if detail else text)


class PolicyError(_InPolicy, CtxwinError):
    """A policy is invalid. Names the file, line, key and (for an expression) the column."""


class PolicyWarning(_InPolicy, UserWarning):
    """A policy works as written but likely not as meant: it uses something deprecated
    (e.g. JMESPath's old backtick string literal), a template field recall alone fills
    with recall off, a folder it does not read. Names the file, line, key and column like
    :class:`PolicyError`."""


class CalibrationWarning(UserWarning):
    """A reported usage too far from ctxwin's count to be the request's (another request's,
    a run's total, a request whose context lives on the provider's side): not learned
    from."""


class PolicyErrors(PolicyError):
    """Several policy errors found in one load; ``errors`` lists each of them (the text
    shows the first :attr:`SHOWN`)."""

    SHOWN = 50

    def __init__(self, errors: Sequence[PolicyError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        shown = [str(e) for e in self.errors[: self.SHOWN]]
        if len(self.errors) > self.SHOWN:
            shown.append(f"... and {len(self.errors) - self.SHOWN:,} more policy errors")
        CtxwinError.__init__(self, "\n".join(shown))
        self.file, self.line, self.key, self.column = (
            first.file,
            first.line,
            first.key,
            first.column,
        )
        self.reason = f"{len(self.errors):,} policy errors"
        self.detail = None


class SummarizerError(CtxwinError):
    """The summarizer cannot be called this way (e.g. an async summarizer under ``apply``), or
    a ready summarizer's model call failed (``ctxwin.summarizers``).

    For a failed call, ``provider`` names the SDK (``"openai"``, ``"anthropic"``,
    ``"langchain"``), ``status_code`` is the HTTP status when there was one (429, 500...) and
    the SDK's own exception is the ``__cause__``. The ``summarize`` step falls back to the cap
    on it like on any exception of the callback, and the report's edit quotes it.
    """

    def __init__(
        self, message: str, *, provider: str | None = None, status_code: int | None = None
    ) -> None:
        self.provider = provider
        self.status_code = status_code
        super().__init__(message)


class StoreError(CtxwinError):
    """A store (``ctxwin.stores``) could not be opened, read or written in time.

    ``url`` names the store (passwords masked) and ``operation`` what failed (``"open"``,
    ``"get"``, ``"put"``); the driver's own exception is the ``__cause__``. Inside ``apply``
    it never escapes: the engine falls back (placeholders without a recall handle, a summary
    computed locally) and the report's notes say so.
    """

    def __init__(
        self, message: str, *, url: str = "", operation: str = "", refused: bool = False
    ) -> None:
        self.url = url
        self.operation = operation
        self.refused = refused
        """The store is up but would not take this value (over its size limit, or full: a
        Redis at ``maxmemory`` under ``noeviction``, a full disk); it still answers reads."""
        super().__init__(message)


class BudgetExceeded(CtxwinError):
    """The request is still over the context window after the policy ran (``overflow: error``).

    ``report`` is the full report of the apply (``None`` when a step raises it: the engine
    raises it again with the report); ``tokens`` and ``limit`` say by how much.
    """

    def __init__(self, *, tokens: int, limit: int, report: Report | None) -> None:
        self.tokens = tokens
        self.limit = limit
        self.report = report
        super().__init__(
            f"request is {tokens:,} tokens after the policy ran, over the context window of "
            f"{limit:,} tokens (overflow: error)"
        )


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside ctxwin (the
    user's call of ``load_policy``, ``observe``...), for ``warnings.warn`` called by the
    function that calls this one, however deep inside ctxwin that is."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    return level
