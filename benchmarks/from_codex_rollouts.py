"""Turn Codex CLI rollouts (``rollout-*.jsonl``) into OpenAI Responses request bodies.

Usage: python benchmarks/from_codex_rollouts.py SRC OUT

Each rollout under SRC (``*.jsonl``, searched recursively; other files are named and
skipped) becomes ``OUT/<name>.json``: ``{"input": [...]}`` with the payload of every
``response_item`` line, in order (messages, reasoning items, function calls and their
outputs), as the corpora's ``codex-00`` and ``codex-01`` were made. The rollout's events,
turn contexts and session metadata are left out. Also read:

- the older rollouts of 2025's CLI, whose items are bare lines (``{"type": "message", ...}``
  after a session line and ``{"record_type": "state"}`` lines);
- compactions: a ``compacted`` line starts a new context, its ``replacement_history``
  followed by the items after it, as Codex sent them; a rollout with compactions gives one
  body per context, ``<name>__seg<k>.json``;
- calls still running when the file was copied (no output) are left off its end.

Replay the folder with ``ctxwin replay OUT/*.json --policy P --optimum`` or ``python
benchmarks/cost_window.py --traces OUT``.

Codex CLI rollouts are published as test fixtures in some repositories (e.g. the three in
jnarowski/agentcmd's ``packages/agent-cli-sdk/tests/fixtures/codex/full/`` that the corpora
do not hold, and the sessions of stop 31 in ``benchmarks/README.md``); they are not bundled
here.
"""

from __future__ import annotations

from typing import Any

from _convert import convert_each, json_lines

__all__ = ["contexts_of", "main", "request_of"]

_ITEMS = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
}
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}


def contexts_of(lines: list[str]) -> list[list[dict[str, Any]]]:
    """The input items of each context of a rollout, in order (a ValueError for a line that
    is not JSON, or a rollout without items)."""
    contexts: list[list[dict[str, Any]]] = [[]]
    for record in json_lines(lines):
        kind = record.get("type")
        if kind == "response_item":
            contexts[-1].append(record["payload"])
        elif kind == "compacted":
            contexts.append(list(record["payload"].get("replacement_history") or []))
        elif kind in _ITEMS and "payload" not in record:
            contexts[-1].append(record)  # a 2025 rollout's bare item
    out = []
    for items in contexts:
        answered = {i.get("call_id") for i in items if str(i.get("type", "")).endswith("_output")}
        while (
            items and items[-1].get("type") in _CALLS and items[-1].get("call_id") not in answered
        ):
            items.pop()  # still running when the file was copied
        if items:
            out.append(items)
    if not out:
        raise ValueError("no response_item lines")
    return out


def request_of(lines: list[str]) -> dict[str, Any]:
    """The request a rollout sent last: its last context (see :func:`contexts_of`)."""
    return {"input": contexts_of(lines)[-1]}


def _bodies(lines: list[str], stem: str) -> list[tuple[str, dict[str, Any]]]:
    contexts = contexts_of(lines)
    if len(contexts) == 1:
        return [(f"{stem}.json", {"input": contexts[0]})]
    return [(f"{stem}__seg{k}.json", {"input": items}) for k, items in enumerate(contexts)]


def main(argv: list[str] | None = None) -> int:
    return convert_each(
        argv,
        __doc__.splitlines()[2],
        "*.jsonl",
        lambda path: _bodies(path.read_text(encoding="utf-8").splitlines(), path.stem),
    )


if __name__ == "__main__":
    raise SystemExit(main())
