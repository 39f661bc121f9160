"""Exact counts on every code point (issue 12, item 11): ctxwin's counter against tiktoken.

    python benchmarks/exact_counts.py [--encoding o200k_base] [--ranges] [--speed]

For every code point U+0000..U+10FFFF (surrogates included: they count as tiktoken counts
their U+FFFD) and each context below, one string; printed: how many strings ctxwin counts
differently from ``len(encoding.encode(s, disallowed_special=()))`` (0 expected), and, for
reference, how many the raw fast engine (quicktok) counts differently (about 4,700: the
characters ctxwin routes to tiktoken). A few seconds per context and encoding.

``--ranges`` prints the code point ranges on which the raw engine's tokens differ from
tiktoken's in any context, in the form of ``ctxwin/tokens/_exact.py``'s ``DIVERGENT``:
re-run it after upgrading quicktok or tiktoken and compare. ``--speed`` times counting
(raw fast engine, ctxwin's routed counter, tiktoken) on a few kinds of text.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxwin.tokens import TiktokenCounter
from ctxwin.tokens.counters import _encoding

CONTEXTS: dict[str, Callable[[str], str]] = {
    "c": lambda c: c,
    "c+'l": lambda c: c + "'l",
    "a+c+' b'": lambda c: "a" + c + " b",
    "c*3": lambda c: c * 3,
    "c*4": lambda c: c * 4,
    "c+'123'": lambda c: c + "123",
    'c+"\'s"': lambda c: c + "'s",
    "'ab'+c+'cd'": lambda c: "ab" + c + "cd",
    "'AB'+c+'cd'": lambda c: "AB" + c + "cd",
    "' '+c": lambda c: " " + c,
    "c+'\\n'": lambda c: c + "\n",
    '"\'"+c': lambda c: "'" + c,
}


def sweep(encoding: str) -> None:
    import quicktok  # type: ignore[import-untyped]

    counter = TiktokenCounter(encoding)
    enc = _encoding(encoding, None)
    raw = quicktok.get_encoding(encoding).count
    ref = enc.encode
    print(f"{encoding}: counter engine {counter.engine}")
    total = 0
    for label, ctx in CONTEXTS.items():
        t0 = time.perf_counter()
        ours = fast = 0
        for cp in range(0x110000):
            s = ctx(chr(cp))
            want = len(ref(s, disallowed_special=()))
            ours += counter.count(s) != want
            if not 0xD800 <= cp <= 0xDFFF:
                fast += raw(s) != want
        total += ours
        print(
            f"  {label:<14} ctxwin mismatches {ours:>5}   raw quicktok {fast:>5}   "
            f"({time.perf_counter() - t0:.1f} s)"
        )
    print(f"  total ctxwin mismatches: {total}")


def ranges(encoding: str) -> list[tuple[int, int]]:
    import quicktok

    enc = _encoding(encoding, None)
    raw = quicktok.get_encoding(encoding).encode
    bad = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if any(raw(s := ctx(c)) != enc.encode_ordinary(s) for ctx in CONTEXTS.values()):
            bad.append(cp)
    out: list[tuple[int, int]] = []
    for cp in bad:
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def speed() -> None:
    import quicktok

    texts = {
        "ascii code": "def f(x):\n    return x ** 2  # ok\n" * 3000,
        "english, smart quotes": "The user’s “request” — done, 42 items. " * 2500,
        "cyrillic": "Привет, мир! Это тест номер 12. " * 3000,
        "cjk": "東京の天気は晴れです。今日は2024年5月15日。" * 3000,
        "emoji chat": "ok 🙂 sure 👍🏽 thanks 🫨 " * 3000,
    }
    for encoding in ("o200k_base", "cl100k_base"):
        counter = TiktokenCounter(encoding)
        raw = quicktok.get_encoding(encoding).count
        enc = _encoding(encoding, None)
        print(f"{encoding}:")
        for label, text in texts.items():
            row = []
            engines: tuple[tuple[str, Callable[[str], object]], ...] = (
                ("raw", raw),
                ("ctxwin", counter.count),
                ("tiktoken", enc.encode_ordinary),
            )
            for name, fn in engines:
                t0 = time.perf_counter()
                for _ in range(5):
                    fn(text)
                row.append(f"{name} {(time.perf_counter() - t0) / 5 * 1e3:6.2f} ms")
            print(f"  {label:<22} ({len(text):>6} chars)  " + "   ".join(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoding", choices=["o200k_base", "cl100k_base", "both"], default="both")
    ap.add_argument("--ranges", action="store_true", help="print the divergent ranges")
    ap.add_argument("--speed", action="store_true", help="time counting instead")
    args = ap.parse_args()
    if args.speed:
        speed()
        return
    encodings = ["o200k_base", "cl100k_base"] if args.encoding == "both" else [args.encoding]
    if args.ranges:
        found: set[tuple[int, int]] = set()
        for e in encodings:
            found.update(ranges(e))
        for a, z in sorted(found):  # overlapping ranges of two encodings: merge by hand
            print(f"    (0x{a:04X}, 0x{z:04X}),")
        return
    for e in encodings:
        sweep(e)


if __name__ == "__main__":
    main()
