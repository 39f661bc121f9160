"""Recall on the shared traces: every handle in every replayed request gives back the exact
original (issue #11, "done means").

    python benchmarks/recall_replay.py [--corpora ../shared/corpora] [--window 30000]
                                       [--cap 1000] [--store memory|sqlite:///x.db|redis://...]

Each trace is replayed request by request (``request_t = apply(history[:t])``) under the
issue's kind of policy with ``recall: true``. In every request, each handle a placeholder or
notice quotes is looked up (``policy.recall``) and compared with the input text of the result
it stands for (found through the edit map: same message, same block). It prints, per
format and in total: requests, edits that saved tokens, handles checked, mismatches (must be 0),
unresolved handles (must be 0), pairing problems (must be 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from _histories import REPO

import ctxwin
from ctxwin._core.model import ToolResult
from ctxwin.formats import get_adapter
from ctxwin.replay import request_points
from ctxwin.steps._shelf import HANDLE_RE

CORPORA = REPO.parent / "shared" / "corpora"
CHAINED = "previous_response_id_seed_auto_chains_through_retries"


def check_request(policy: ctxwin.Policy, request: object, fmt: str, tally: Counter[str]) -> None:
    out = policy.apply(request, fmt)
    before = ctxwin.parse(request, fmt)
    tally["requests"] += 1
    tally["pairing problems"] += len(ctxwin.check(out.request, fmt))
    tally["edits saving tokens"] += sum(1 for e in out.report.edits if e.saved > 0)
    for change in out.edit_map.messages:
        if change.source is None:
            continue
        msg = out.conversation.messages[change.index]
        src = before.messages[change.source]
        for bi, block in enumerate(msg.blocks):
            if not isinstance(block, ToolResult):
                continue
            for handle in set(HANDLE_RE.findall(block.text)):
                original = src.blocks[bi]
                assert isinstance(original, ToolResult)
                answer = policy.recall(handle)
                tally["handles checked"] += 1
                if answer.is_error:
                    tally["unresolved"] += 1
                elif answer.text != original.text:
                    tally["mismatches"] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--window", type=int, default=30_000)
    ap.add_argument("--cap", type=int, default=1000)
    ap.add_argument("--store", default="memory")
    args = ap.parse_args(argv)
    if not args.corpora.is_dir():
        print(f"no corpora at {args.corpora}: nothing to replay")
        return 0
    totals: Counter[str] = Counter()
    by_format: dict[str, Counter[str]] = {}
    for path in sorted(args.corpora.glob("*/*.json")):
        if CHAINED in path.stem:
            continue
        fmt = path.parent.name
        body = json.loads(path.read_text(encoding="utf-8"))
        policy = ctxwin.load_policy(
            {
                "context_window": args.window,
                "recall": True,
                "window": {"keep_rounds": 3, "clear_reasoning": True},
                "tools": {"*": {"max_tokens": args.cap}},
            },
            store=args.store,
        )
        adapter = get_adapter(fmt)
        listed = adapter.listed(body)
        tally = by_format.setdefault(fmt, Counter())
        for t in request_points(listed, fmt):
            if isinstance(listed, dict):
                items = listed[adapter.container]
                request: object = {**listed, adapter.container: items[:t]}
            else:
                request = list(listed)[:t]  # type: ignore[call-overload]
            check_request(policy, request, fmt, tally)
        tally["traces"] += 1
    keys = ("traces", "requests", "edits saving tokens", "handles checked")
    keys += ("mismatches", "unresolved", "pairing problems")
    print(f"recall replay: window {args.window:,}, caps {args.cap:,}, store {args.store}")
    print(f"{'format':18s}" + "".join(f"{k:>19s}" for k in keys))
    for fmt, tally in sorted(by_format.items()):
        totals.update(tally)
        print(f"{fmt:18s}" + "".join(f"{tally[k]:>19,}" for k in keys))
    print(f"{'TOTAL':18s}" + "".join(f"{totals[k]:>19,}" for k in keys))
    ok = totals["mismatches"] == totals["unresolved"] == totals["pairing problems"] == 0
    print("every handle resolves to the exact original:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
