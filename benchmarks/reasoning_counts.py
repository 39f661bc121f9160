"""What OpenAI counts of a reasoning item: Codex CLI's logs against ctxwin's count.

Usage: python benchmarks/reasoning_counts.py SRC

Codex CLI rollouts under SRC (``*.jsonl``, searched recursively) record, after each model
call, what the provider counted (``token_count``: the call's input, cached input and
reasoning output tokens), and the call's reasoning items with their ``encrypted_content``.
This prints:

- **the rate**: over the calls that made one reasoning item, the fit of the reasoning tokens
  they report on the length of its ``encrypted_content`` (``tokens = (characters - c) / r``),
  and what ctxwin's Responses adapter counts for those items against what was reported,
  with its rate (``ENCRYPTED_REASONING``) and at one token per four characters (the generic
  rule for opaque strings);
- **the sessions**: for each rollout of one context with no server-side web search (whose
  results the provider adds and the log does not hold), the fit of the provider's input
  tokens on ctxwin's count of the same request (which leaves out the reasoning items of
  earlier turns, before the latest user message, as OpenAI drops them), and on the count of
  everything the request holds, that reasoning too (a session whose counts follow neither,
  R² under ``real_bills.ALIGNED``, is named as not matched: its log lost calls or holds
  other content).

The figures in ``benchmarks/README.md`` (stop 32) use the Codex sessions of stop 31 (sources
in that README); they are not bundled.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import from_codex_rollouts as codex
from _convert import json_lines
from real_bills import ALIGNED, fit

import ctxwin
from ctxwin._core.model import Opaque
from ctxwin._policy.tables import Pricing
from ctxwin.formats import get_adapter
from ctxwin.replay import replay, request_points
from ctxwin.tokens._meter import Overheads, TokenMeter

__all__ = ["calls_of", "main", "session_counts"]

Item = dict[str, Any]


def _counts(records: list[Item]) -> Iterator[tuple[list[Item], dict[str, Any]]]:
    """Each model call's reasoning items and its ``last_token_usage`` (a count sent twice
    is taken once)."""
    reasoning: list[Item] = []
    last_total = None
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "response_item" and payload.get("type") == "reasoning":
            reasoning.append(payload)
        elif payload.get("type") == "token_count":
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict) and total != last_total:
                last_total = total
                yield reasoning, last
                reasoning = []


def calls_of(records: list[Item]) -> list[tuple[Item, int]]:
    """The calls that made one reasoning item with encrypted reasoning: the item, and the
    reasoning tokens the call reported."""
    out = []
    for items, usage in _counts(records):
        if len(items) == 1 and items[0].get("encrypted_content"):
            out.append((items[0], int(usage.get("reasoning_output_tokens") or 0)))
    return out


def session_counts(lines: list[str]) -> tuple[list[int], list[int], list[int]] | None:
    """For a rollout of one context without web searches: the provider's input tokens for
    each request, ctxwin's count of it (without the reasoning of earlier turns, which OpenAI
    drops), and the count of everything the request holds, that reasoning too (ctxwin's
    count before stop 33); None for another rollout."""
    try:
        contexts = codex.contexts_of(lines)
    except ValueError:
        return None
    items = contexts[0]
    if len(contexts) != 1 or any(i.get("type") == "web_search_call" for i in items):
        return None
    reported = [int(usage["input_tokens"]) for _, usage in _counts(json_lines(lines))]
    adapter = get_adapter("openai-responses")
    meter = TokenMeter(ctxwin.Policy().counter, adapter.overheads)
    counted: list[int] = []
    every: list[int] = []
    for t in request_points({"input": items}, "openai-responses")[: len(reported)]:
        conv = adapter.parse({"input": items[:t]})
        counted.append(meter.conversation(conv))
        every.append(meter.envelope(conv) + sum(meter.message(m) for m in conv.messages))
    return reported[: len(counted)], counted, every


def turn_reads(lines: list[str]) -> list[tuple[int, int, int, int]]:
    """For a rollout :func:`session_counts` reads, at each request that follows a new user
    message: the input the provider read from its cache, what the replay's cache model reads
    (up to the first reasoning item of the turn before, which OpenAI now drops), and what a
    model that kept every item cached would read (the whole previous request), with request
    ``k``'s index first. Tokens of the model are ctxwin's count."""
    counts = session_counts(lines)
    if counts is None:
        return []
    items = codex.contexts_of(lines)[0]
    usages = [usage for _, usage in _counts(json_lines(lines))][: len(counts[0])]
    points = request_points({"input": items}, "openai-responses")[: len(usages)]
    plain = Pricing(cache_write=1.0, cache_read=0.1)
    run = replay({"input": items[: points[-1]]}, None, format="openai-responses", pricing=plain)
    users = [
        k
        for k, i in enumerate(items)
        if i.get("type", "message") == "message" and i.get("role") == "user"
    ]
    out = []
    for k in range(1, len(points)):
        if any(points[k - 1] <= u < points[k] for u in users):
            cached = run.requests_detail[k].unmanaged[1]
            out.append(
                (k, int(usages[k].get("cached_input_tokens") or 0), cached, counts[2][k - 1])
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    args = ap.parse_args(argv)
    adapter = get_adapter("openai-responses")
    counter = ctxwin.Policy().counter
    now = TokenMeter(counter, adapter.overheads)
    generic = TokenMeter(counter, Overheads())
    calls: list[tuple[Item, int]] = []
    sessions = []
    reads: dict[str, list[tuple[int, int, int, int]]] = {}
    for path in sorted(args.src.rglob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            records = json_lines(lines)
        except ValueError:
            continue
        calls += calls_of(records)
        counts = session_counts(lines)
        if counts is not None and len(counts[0]) >= 3:
            sessions.append((path.stem, counts))
            reads[path.stem] = turn_reads(lines)
    if len(calls) < 3:
        print(f"fewer than 3 calls with one reasoning item under {args.src}", file=sys.stderr)
        return 2
    chars = [float(len(item["encrypted_content"])) for item, _ in calls]
    tokens = [float(t) for _, t in calls]
    slope, intercept, r2 = fit(chars, tokens)
    print(
        f"{len(calls)} calls with one reasoning item: reasoning tokens = (characters - "
        f"{-intercept / slope:.0f}) / {1 / slope:.2f}, R² {r2:.3f}"
    )
    reported = sum(tokens)
    for name, meter in (("the adapter's rate", now), ("one per four characters", generic)):
        ours = sum(
            meter.opaque(Opaque("reasoning", item, category="reasoning")) for item, _ in calls
        )
        print(f"  ctxwin's count, {name}: {ours / reported:.3f} x what was reported")
    for name, (got, counted, every) in sessions:
        y = [float(v) for v in got]
        b1, _, r1 = fit([float(v) for v in counted], y)
        b2, _, r2b = fit([float(v) for v in every], y)
        if max(r1, r2b) < ALIGNED:
            print(f"session {name} ({len(got)} requests): not matched (R² {r1:.2f})")
            continue
        print(
            f"session {name} ({len(got)} requests): provider = a + b x ctxwin's count, "
            f"b {b1:.3f} R² {r1:.5f}; with earlier turns' reasoning counted too b {b2:.3f} "
            f"R² {r2b:.5f}"
        )
        a1 = statistics.fmean(y) - b1 * statistics.fmean([float(v) for v in counted])
        for k, read, model, kept in reads[name]:
            print(
                f"  request {k}, after a new user message: the provider read {read:,} tokens "
                f"from its cache; the replay's model {a1 + b1 * model:,.0f}; a cache of the "
                f"whole previous request {a1 + b1 * kept:,.0f} (in the provider's tokens: "
                "a + b x ctxwin's count)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
