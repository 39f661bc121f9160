"""What the recall tests of every framework share: files of numbered lines, a policy with
recall on that clears old reads, and the fake model's plan.

The plan: read the eight files one a turn; as soon as a request shows a cleared read, recall
lines 10-20 of it by the handle its placeholder quotes; then recall an unknown handle (an
error answer); then read the rest and answer. Each framework's fake model feeds it the
tool results of the request it received.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ctxwin
from ctxwin.testing import FakeCounter

HANDLE = re.compile(r'result cleared \(\d+ tokens\)\. recall\("(r-[0-9a-f]{16})"\)')
PATHS = [f"src/m{i}.py" for i in range(8)]
UNKNOWN = "r-000000000000"
UNKNOWN_TEXT = f"recall: unknown handle {UNKNOWN} (expired or never kept)"
ANSWER = "setting 10 of m0 is 70."
POLICY: dict[str, Any] = {
    "context_window": 24_000,
    "recall": True,
    "window": {"trigger": 0.6, "target": 0.3, "keep_rounds": 2},
    "tools": {"*": {"max_tokens": 5_000}},
}


def make_policy(**overrides: Any) -> ctxwin.Policy:
    return ctxwin.Policy({**POLICY, **overrides}, counter=FakeCounter())


def file_text(path: str) -> str:
    """800 lines, 3,200 tokens under the FakeCounter (one word a token)."""
    return "".join(f"{path}:{i}: value_{i} = {i * 7}\n" for i in range(1, 801))


def lines_of(text: str, first: int, last: int) -> str:
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


RECALLED = lines_of(file_text(PATHS[0]), 10, 20)


@dataclass
class Plan:
    """The fake model's decisions; ``recalled`` maps the handle it recalled to the call id
    of the read whose placeholder quoted it."""

    recalled: dict[str, str] = field(default_factory=dict)

    def next(
        self, reads: Sequence[tuple[str, str]], recalls: int
    ) -> tuple[str, dict[str, Any]] | None:
        """The next call (tool name, arguments), or None to answer; ``reads`` are the
        (call id, text) of the read results the model received, ``recalls`` how many recall
        results."""
        if not self.recalled:
            for call_id, text in reads:
                found = HANDLE.search(text)
                if found:
                    self.recalled[found.group(1)] = call_id
                    return "recall", {"handle": found.group(1), "lines": "10-20"}
        elif recalls == 1:
            return "recall", {"handle": UNKNOWN}
        if len(reads) < len(PATHS):
            return "read_file", {"path": PATHS[len(reads)]}
        return None
