"""Turn Claude Code session logs into Anthropic Messages request bodies.

Usage: python benchmarks/from_claude_sessions.py SRC OUT

Each session log under SRC (``*.jsonl``, searched recursively: one record a line, as Claude
Code keeps them in ``~/.claude/projects/``) becomes ``OUT/<name>.json``: the request the
session sent last. A log holds one conversation per root record (``parentUuid`` null): its
first, and one more after each compaction or ``/clear``; a log with several gives
``<name>__seg<k>.json`` each, in file order. A conversation is the ``parentUuid`` chain from
its latest user or assistant record back to its root, plus the records holding the results
of parallel tool calls (Claude Code hangs them off the record of their own call, so the
chain passes through only the last). A log without ``parentUuid`` (``claude -p
--output-format stream-json``) is one conversation, in file order.

Records become messages as the API read them: the records of one API message (one per
content block, same ``message.id``) merge into one assistant message, consecutive user
records into one user message with its tool results first; only the fields the API reads
are kept, empty text and unsigned thinking left out. A trailing assistant message answers
the last request, so it is not part of it, nor a turn whose tool call has no result (a log
copied while a tool ran). The logs hold no system prompt or tool list, so the bodies have
neither. Replay the folder with ``python benchmarks/cost_window.py --traces OUT``.

The figures in ``benchmarks/README.md`` (stop 31) use 13 long sessions in
Durban-Designer/vsla (``docs/history/raw_sessions/``) and agentcmd's Claude fixtures
(``packages/agent-cli-sdk/tests/fixtures/claude/``); they are not bundled.
"""

from __future__ import annotations

from typing import Any

from _convert import convert_each, json_lines

__all__ = ["bodies_of", "conversations_of", "main", "turn_ids"]

_KEYS = {
    "text": ("type", "text"),
    "tool_use": ("type", "id", "name", "input"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
    "image": ("type", "source"),
    "document": ("type", "source"),
}
_ASSISTANT = {"text", "tool_use", "thinking", "redacted_thinking"}
_USER = {"text", "tool_result", "image", "document"}

Record = dict[str, Any]


def _block(block: Any, role: str) -> dict[str, Any] | None:
    """The block as the API reads it, or None for one it does not take."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    kind = block.get("type") if isinstance(block, dict) else None
    if kind not in (_ASSISTANT if role == "assistant" else _USER):
        return None
    out = {k: block[k] for k in _KEYS[kind] if k in block}
    if kind == "text" and not str(out.get("text", "")).strip():
        return None
    if kind == "thinking" and not out.get("signature"):
        return None  # unsigned thinking cannot be sent back
    if kind == "tool_result":
        if isinstance(out.get("content"), list):
            out["content"] = [b for b in (_block(c, "user") for c in out["content"]) if b]
        if out.get("is_error") is False:
            del out["is_error"]
    return out


def _blocks(record: Record, role: str) -> list[dict[str, Any]]:
    content = record["message"].get("content")
    items = [content] if isinstance(content, str) else content or []
    return [b for b in (_block(item, role) for item in items) if b]


def _merged(records: list[Record]) -> list[dict[str, Any]]:
    """Messages of a conversation's records, one API message each (``_id``: its id)."""
    out: list[dict[str, Any]] = []
    for record in records:
        role = record["message"].get("role") or record.get("type")
        blocks = _blocks(record, role) if role in ("user", "assistant") else []
        if not blocks:
            continue
        last = out[-1] if out else None
        if role == "user":
            if last is not None and last["role"] == "user":
                last["content"].extend(blocks)
            else:
                out.append({"role": "user", "content": blocks, "_id": None})
            continue
        mid = record["message"].get("id")
        before = out[-2] if len(out) > 1 else None
        results_only = last is not None and all(b["type"] == "tool_result" for b in last["content"])
        if before is not None and results_only and before["_id"] == mid and mid:
            before["content"].extend(blocks)  # its results came between its blocks
        elif last is not None and last["role"] == "assistant":
            last["content"].extend(blocks)
            last["_id"] = mid
        else:
            out.append({"role": "assistant", "content": blocks, "_id": mid})
    return out


def _from_user(records: list[Record]) -> list[dict[str, Any]]:
    """The messages of a conversation's records from its first user message on."""
    messages = _merged(records)
    while messages and messages[0]["role"] != "user":
        messages.pop(0)
    return messages


def turn_ids(records: list[Record]) -> list[str | None]:
    """The ids of the API messages that answered the requests of a conversation, in order:
    request ``k`` of its body (:func:`bodies_of`) was answered by the ``k``-th (the records
    of an API message carry its usage)."""
    return [m["_id"] for m in _from_user(records) if m["role"] == "assistant"]


def _request(records: list[Record]) -> list[dict[str, Any]]:
    """The messages of the request a conversation's records make up."""
    messages = _from_user(records)
    for msg in messages:
        if msg["role"] == "user":  # the API wants the results first
            msg["content"].sort(key=lambda b: b["type"] != "tool_result")
    for i, msg in enumerate(messages[:-1]):
        uses = {b["id"] for b in msg["content"] if b["type"] == "tool_use"}
        nxt = messages[i + 1]["content"]
        if uses - {b["tool_use_id"] for b in nxt if b["type"] == "tool_result"}:
            messages = messages[:i]  # a call without its result: the log was copied mid-turn
            break
    while messages and messages[-1]["role"] == "assistant":
        messages.pop()
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def conversations_of(records: list[Record]) -> list[list[Record]]:
    """The conversations of a log's records, in file order (see the module's docstring)."""
    turns = [r for r in records if r.get("type") in ("user", "assistant")]
    turns = [r for r in turns if isinstance(r.get("message"), dict)]
    if not any("parentUuid" in r for r in turns):
        return [turns] if turns else []
    by_uuid = {r["uuid"]: r for r in records if r.get("uuid")}
    order = {id(r): n for n, r in enumerate(records)}
    is_turn = {id(r) for r in turns}

    def chain(leaf: Record) -> list[Record]:
        out, seen, cur = [], set(), leaf
        while cur is not None and cur.get("uuid") not in seen:
            seen.add(cur.get("uuid"))
            out.append(cur)
            parent = cur.get("parentUuid")
            cur = by_uuid.get(parent) if parent else None
        return out[::-1]

    root_of: dict[str, str] = {}

    def root(record: Record) -> str:
        """The uuid of the root of ``record``'s chain (each record's found once)."""
        path: list[str] = []
        cur: Record | None = record
        while cur is not None and cur["uuid"] not in root_of and cur["uuid"] not in path:
            path.append(cur["uuid"])
            parent = cur.get("parentUuid")
            cur = by_uuid.get(parent) if parent else None
        known = cur is not None and cur["uuid"] in root_of
        top = root_of[cur["uuid"]] if known and cur is not None else path[-1]
        root_of.update((uuid, top) for uuid in path)
        return top

    latest: dict[str, Record] = {}
    for record in turns:
        if record.get("uuid"):
            latest[root(record)] = record
    out = []
    for leaf in sorted(latest.values(), key=lambda r: order[id(r)]):
        kept = chain(leaf)
        uuids = {r.get("uuid") for r in kept}
        grew = True
        while grew:  # the results of parallel calls, hung off the records of their calls
            grew = False
            for r in turns:
                if r.get("uuid") not in uuids and r.get("parentUuid") in uuids and _results(r):
                    uuids.add(r.get("uuid"))
                    kept.append(r)
                    grew = True
        out.append(sorted((r for r in kept if id(r) in is_turn), key=lambda r: order[id(r)]))
    return out


def _results(record: Record) -> bool:
    content = record["message"].get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def bodies_of(lines: list[str], stem: str) -> list[tuple[str, dict[str, Any]]]:
    """The requests a session log's ``lines`` make up, named after ``stem`` (a ValueError
    for a line that is not JSON, or a log that makes up no request)."""
    conversations = conversations_of(json_lines(lines))
    out = []
    for k, conversation in enumerate(conversations):
        messages = _request(conversation)
        if len(messages) < 2:
            continue
        name = f"{stem}.json" if len(conversations) == 1 else f"{stem}__seg{k}.json"
        out.append((name, {"messages": messages}))
    if not out:
        raise ValueError("no request")
    return out


def main(argv: list[str] | None = None) -> int:
    return convert_each(
        argv,
        __doc__.splitlines()[2],
        "*.jsonl",
        lambda path: bodies_of(path.read_text(encoding="utf-8").splitlines(), path.stem),
    )


if __name__ == "__main__":
    raise SystemExit(main())
