"""Per-operation latency of the stores (issue 11): memory, SQLite on a temporary file, Redis.

    python benchmarks/stores.py [--ops 2000] [--size 4096] [--redis-url redis://...]

For each store: ``--ops`` puts of distinct keys with ``--size``-byte values, then ``--ops``
gets of those keys (hits) and ``--ops`` gets of absent keys (misses), each call timed alone
with ``perf_counter_ns``. Printed: median and p99 in microseconds. Redis runs against
``--redis-url`` or ``CTXWIN_REDIS_URL``, else a ``redis-server`` from PATH started on a free
port of 127.0.0.1 for the run (over loopback: the figures include a network round trip);
without either it says skipped.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxwin.stores import Store, open_store


def timings(call: Callable[[int], object], n: int) -> list[float]:
    """Microseconds of each of ``n`` calls ``call(i)``."""
    out = []
    for i in range(n):
        start = time.perf_counter_ns()
        call(i)
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def p99(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * 0.99))]


def measure(name: str, store: Store, ops: int, size: int) -> None:
    value = os.urandom(size)
    run = os.urandom(4).hex()
    store.put(f"warm-{run}", value)  # the first call opens connections
    store.get(f"warm-{run}")
    rows = {
        "put": timings(lambda i: store.put(f"{run}-{i}", value), ops),
        "get (hit)": timings(lambda i: store.get(f"{run}-{i}"), ops),
        "get (miss)": timings(lambda i: store.get(f"absent-{run}-{i}"), ops),
    }
    for op, figures in rows.items():
        print(
            f"{name:8} {op:11} median {statistics.median(figures):9.1f} us"
            f"   p99 {p99(figures):9.1f} us"
        )


@contextmanager
def redis_url(given: str | None) -> Iterator[str | None]:
    """A Redis to measure: the one given, else a redis-server of our own, else None."""
    if given:
        yield given
        return
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", folder, "--logfile", f"{folder}/redis.log"]
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        try:
            url = f"redis://127.0.0.1:{port}/0"
            probe = open_store(url)
            for _ in range(150):
                try:
                    probe.get("ping")
                    break
                except Exception:
                    time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--size", type=int, default=4096, help="bytes per value")
    parser.add_argument("--redis-url", default=os.environ.get("CTXWIN_REDIS_URL"))
    args = parser.parse_args()
    print(
        f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"{args.ops} ops per row, values of {args.size:,} bytes"
    )
    measure("memory", open_store("memory"), args.ops, args.size)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        measure("sqlite", store, args.ops, args.size)
        store.close()
    with redis_url(args.redis_url) as url:
        if url is None:
            print("redis    skipped: no --redis-url, no CTXWIN_REDIS_URL, no redis-server on PATH")
        else:
            store = open_store(url)
            measure("redis", store, args.ops, args.size)
            store.close()


if __name__ == "__main__":
    main()
