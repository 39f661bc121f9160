"""Memory of one long-lived Policy serving many distinct conversations (a server's case).

    python benchmarks/memory.py [--conversations 120000] [--every 20000]

Each conversation is a fresh 10-message OpenAI-chat agent history (system, task, four rounds
of one call and a 200-character result), applied once through the same ``Policy`` with a
window and caps. Every ``--every`` conversations it prints the process's resident memory
(Linux ``/proc/self/statm``, after a garbage collection); at the end, the same after
``policy.clear_memo()``. The memos are bounded by entries, so the figure levels off once
they are full; Python keeps some freed memory in its own arenas, so ``clear_memo`` does not
bring it back to where it started.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import Any

from _histories import REPO  # noqa: F401 - puts this checkout on sys.path

import ctxwin
from ctxwin.testing import agent_body

POLICY: dict[str, Any] = {"context_window": 3000, "tools": {"*": {"max_tokens": 60}}}


def resident_mb() -> int:
    """Resident memory of this process in MiB (Linux only)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 2**20


def conversation(i: int) -> dict[str, Any]:
    rounds = [[("search", {"q": f"q{i}-{r}"}, f"result {i} {r} " * 20)] for r in range(4)]
    return agent_body(rounds)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=120_000)
    ap.add_argument("--every", type=int, default=20_000)
    args = ap.parse_args(argv)
    if not os.path.exists("/proc/self/statm"):
        sys.exit("memory.py reads /proc/self/statm: Linux only")
    policy = ctxwin.Policy(POLICY)
    gc.collect()
    print(f"start: {resident_mb()} MB resident")
    for i in range(args.conversations):
        policy.apply(conversation(i))
        if (i + 1) % args.every == 0:
            gc.collect()
            print(f"{i + 1:>9,} conversations: {resident_mb():>6,} MB resident", flush=True)
    policy.clear_memo()
    gc.collect()
    print(f"after clear_memo: {resident_mb()} MB resident")


if __name__ == "__main__":
    main()
