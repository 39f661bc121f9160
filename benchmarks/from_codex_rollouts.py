"""Turn Codex CLI rollouts (``rollout-*.jsonl``) into OpenAI Responses request bodies.

Usage: python benchmarks/from_codex_rollouts.py SRC OUT

Each rollout under SRC (searched recursively) becomes ``OUT/<name>.json``: ``{"input": [...]}``
with the payload of every ``response_item`` line, in order (messages, reasoning items,
function calls and their outputs), as the corpora's ``codex-00`` and ``codex-01`` were made.
The rollout's events, turn contexts and session metadata are left out. Replay the folder with
``ctxwin replay OUT/*.json --policy P --optimum`` or ``python benchmarks/cost_window.py
--traces OUT``.

Codex CLI rollouts are published as test fixtures in some repositories (e.g. the three in
jnarowski/agentcmd's ``packages/agent-cli-sdk/tests/fixtures/codex/full/`` that the corpora
do not hold); they are not bundled here.
"""

from __future__ import annotations

import json
from typing import Any

from _convert import convert_all

__all__ = ["main", "request_of"]


def request_of(lines: list[str]) -> dict[str, Any]:
    """The request a rollout's response items make up (a ValueError for a line that is not
    JSON, or a rollout without items)."""
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {n}: not JSON ({exc})") from None
        if isinstance(record, dict) and record.get("type") == "response_item":
            items.append(record["payload"])
    if not items:
        raise ValueError("no response_item lines")
    return {"input": items}


def main(argv: list[str] | None = None) -> int:
    return convert_all(
        argv,
        __doc__.splitlines()[2],
        "rollout-*.jsonl",
        lambda path: request_of(path.read_text(encoding="utf-8").splitlines()),
        lambda path: f"{path.stem}.json",
    )


if __name__ == "__main__":
    raise SystemExit(main())
