"""Rendering replays (:func:`ctxwin.replay.replay` results) as text, Markdown and JSON.

Each trace unmanaged beside managed with their ratios (managed / unmanaged), and the sum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from ctxwin._report.data import SCHEMA_VERSION
from ctxwin._report.tables import (
    Col,
    clip,
    common_dir,
    dumps_json,
    fmt_num,
    fmt_ratio,
    many,
    md_table,
    text_table,
    wrap_lines,
)

if TYPE_CHECKING:
    from ctxwin._report.data import ReplayResult, ReplayStats

__all__ = ["optimum_total", "replay_json", "replay_markdown", "replay_text", "replay_total"]


_add: Callable[[ReplayStats, ReplayStats], ReplayStats] = lambda a, b: a + b  # noqa: E731


def replay_total(results: Sequence[ReplayResult]) -> tuple[ReplayStats, ReplayStats]:
    """The unmanaged and managed stats summed (each trace's cost at its own prices)."""
    return (
        reduce(_add, (r.unmanaged for r in results)),
        reduce(_add, (r.managed for r in results)),
    )


def optimum_total(results: Sequence[ReplayResult]) -> ReplayStats | None:
    """The optima summed when every trace has one, else None."""
    optima = [r.optimum for r in results if r.optimum is not None]
    return reduce(_add, optima) if optima and len(optima) == len(results) else None


def _div(a: float, b: float) -> float:
    return a / b if b else 1.0


def _stats_cells(s: ReplayStats) -> list[str]:
    return [
        fmt_num(s.requests),
        fmt_num(s.input_tokens),
        fmt_num(s.cached_tokens),
        f"{s.effective_cost:,.1f}",
        fmt_num(s.peak),
        fmt_num(s.problems),
    ]


def _ratio_cells(u: ReplayStats, m: ReplayStats) -> list[str]:
    return [
        "",
        fmt_ratio(_div(m.input_tokens, u.input_tokens)),
        "",
        fmt_ratio(_div(m.effective_cost, u.effective_cost)),
        fmt_ratio(_div(m.peak, u.peak)),
        "",
    ]


def _price(x: float) -> str:
    return f"{x:g}"


def cost_formula(results: Sequence[ReplayResult], times: str = "x") -> str:
    """How the effective cost is computed: one formula when every trace has the same
    prices, else each trace's (traces on different models are priced apart)."""
    groups: dict[tuple[float, float], list[str]] = {}
    for r in results:
        groups.setdefault((r.managed.write_price, r.managed.read_price), []).append(r.name)
    if len(groups) == 1:
        ((write, read),) = groups
        return (
            f"eff. cost = {_price(write)} {times} uncached + {_price(read)} {times} cached input "
            "tokens"
        )
    common = common_dir([r.name for r in results])
    by = "; ".join(
        f"{_price(w)} / {_price(r)} for "
        + (names[0][len(common) :] or names[0] if len(names) == 1 else many(len(names), "trace"))
        for (w, r), names in groups.items()
    )
    return (
        f"eff. cost = write {times} uncached + read {times} cached input tokens, at each "
        f"trace's prices (write / read: {by})"
    )


def replay_text(results: Sequence[ReplayResult], width: int = 100) -> str:
    """Each trace unmanaged, managed and their ratio (managed / unmanaged), then the sum.

    The total's peak is the largest request of any trace; its ratios are those of the sums.
    """
    if not results:
        return "ctxwin replay: no traces\n"
    cols = (
        Col("trace", "<", flex=True, min_width=16, cut_left=True),
        Col("sent", "<"),
        Col("requests"),
        Col("input"),
        Col("cached"),
        Col("eff. cost"),
        Col("peak"),
        Col("problems"),
    )
    rows: list[Sequence[str] | None] = []

    def block(name: str, u: ReplayStats, m: ReplayStats, o: ReplayStats | None) -> None:
        rows.append([name, "unmanaged", *_stats_cells(u)])
        rows.append(["", "managed", *_stats_cells(m)])
        rows.append(["", "ratio", *_ratio_cells(u, m)])
        if o is not None:
            rows.append(["", "optimum", *_stats_cells(o)])
            rows.append(
                [
                    "",
                    "x optimum",
                    "",
                    "",
                    "",
                    fmt_ratio(_div(m.effective_cost, o.effective_cost)),
                    "",
                    "",
                ]
            )

    common = common_dir([r.name for r in results])
    for r in results:
        block(r.name[len(common) :], r.unmanaged, r.managed, r.optimum)
    if len(results) > 1:
        u, m = replay_total(results)
        rows.append(None)
        block(f"total ({len(results)} traces)", u, m, optimum_total(results))
    formats = ", ".join(dict.fromkeys(r.format for r in results))
    head = [
        "ctxwin replay",
        clip(
            f"{many(len(results), 'trace')} ({formats})" + (f" in {common}" if common else ""),
            width,
        ),
        *wrap_lines(f"{cost_formula(results)}; ratio = managed / unmanaged", width),
        "",
    ]
    notes = [
        line
        for r in results
        for note in r.notes
        for line in wrap_lines(f"{r.name[len(common) :] or r.name}: {note}", width - 2)
    ]
    tail = ["", "notes:", *(f"  {line}" for line in notes)] if notes else []
    return "\n".join(head + text_table(cols, rows, width) + tail) + "\n"


def replay_markdown(results: Sequence[ReplayResult]) -> str:
    """One row per trace (unmanaged → managed in each cell) and a total row."""
    if not results:
        return "### ctxwin replay\n\nNo traces.\n"

    def row(name: str, fmt: str, u: ReplayStats, m: ReplayStats) -> list[str]:
        return [
            name,
            fmt,
            fmt_num(m.requests),
            f"{fmt_num(u.input_tokens)} → {fmt_num(m.input_tokens)}",
            f"{fmt_num(u.cached_tokens)} → {fmt_num(m.cached_tokens)}",
            f"{u.effective_cost:,.1f} → {m.effective_cost:,.1f}",
            fmt_ratio(_div(m.effective_cost, u.effective_cost)),
            f"{fmt_num(u.peak)} → {fmt_num(m.peak)}",
            fmt_ratio(_div(m.peak, u.peak)),
            f"{fmt_num(u.problems)} → {fmt_num(m.problems)}",
        ]

    optimum = optimum_total(results)  # with an optimum for every trace: their ratio too

    def x_optimum(m: ReplayStats, o: ReplayStats | None) -> list[str]:
        if optimum is None or o is None:
            return []
        return [fmt_ratio(_div(m.effective_cost, o.effective_cost))]

    rows = [
        [*row(f"`{r.name}`", r.format, r.unmanaged, r.managed), *x_optimum(r.managed, r.optimum)]
        for r in results
    ]
    if len(results) > 1:
        u, m = replay_total(results)
        total = [*row(f"total ({len(results)})", "", u, m), *x_optimum(m, optimum)]
        rows.append([f"**{c}**" if c else c for c in total])
    header: tuple[str, ...] = (
        "trace",
        "format",
        "requests",
        "input",
        "cached",
        "eff. cost",
        "cost ratio",
        "peak",
        "peak ratio",
        "problems",
    )
    if optimum is not None:
        header += ("× optimum",)
    out = [
        "### ctxwin replay",
        "",
        f"Unmanaged → managed. {cost_formula(results, '×')}; ratios are managed / unmanaged"
        + (" (× optimum: managed / the clairvoyant optimum's)." if optimum else "."),
        "",
        *md_table(header, rows, set(range(2, len(header)))),
    ]
    notes = [f"- `{r.name}`: {note}" for r in results for note in r.notes]
    if notes:
        out += ["", "Notes:", "", *notes]
    return "\n".join(out) + "\n"


def replay_json(results: Sequence[ReplayResult]) -> str:
    """Every trace's replay and the sum, as one JSON document.

    Schema (``version`` 1)::

        {"version": 1, "kind": "replay",
         "traces": [<ReplayResult.to_dict()>, ...],
         "total": {"traces": int, "managed": <ReplayStats.to_dict()>,
                   "unmanaged": <ReplayStats.to_dict()>, "cost_ratio": float,
                   "peak_ratio": float, "optimum": <ReplayStats.to_dict()> | null,
                   "optimum_ratio": float | null}}

    ``ReplayStats.to_dict()`` is ``{"requests", "input_tokens", "cached_tokens",
    "effective_cost", "peak", "problems"}``; a total's cost is the sum of each trace's, at
    its own prices. ``total`` is null when there are no traces; its ``optimum`` when a trace
    has none (replayed without ``optimum=True``).
    """
    total: dict[str, object] | None = None
    if results:
        u, m = replay_total(results)
        o = optimum_total(results)
        total = {
            "traces": len(results),
            "managed": m.to_dict(),
            "unmanaged": u.to_dict(),
            "cost_ratio": round(_div(m.effective_cost, u.effective_cost), 4),
            "peak_ratio": round(_div(m.peak, u.peak), 4),
            "optimum": None if o is None else o.to_dict(),
            "optimum_ratio": None
            if o is None
            else round(_div(m.effective_cost, o.effective_cost), 4),
        }
    return dumps_json(
        {
            "version": SCHEMA_VERSION,
            "kind": "replay",
            "traces": [r.to_dict() for r in results],
            "total": total,
        }
    )
