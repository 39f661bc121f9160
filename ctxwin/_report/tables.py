"""Shared pieces of the report renderers: number formats, text tables, Markdown tables."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "GAP",
    "Col",
    "clip",
    "common_dir",
    "dumps_json",
    "fmt_arrow",
    "fmt_num",
    "fmt_pct",
    "fmt_ratio",
    "label_pairs",
    "many",
    "md_cell",
    "md_table",
    "text_table",
    "tools_label",
    "upper_first",
    "wrap_lines",
]

GAP = "  "
"""Between the columns of a text table."""


def fmt_num(value: int) -> str:
    return f"{value:,}"


def fmt_pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def fmt_ratio(value: float) -> str:
    return f"{value:.3f}x"


def fmt_arrow(before: int, after: int, arrow: str = "->") -> str:
    return f"{fmt_num(before)} {arrow} {fmt_num(after)}"


def clip(text: str, width: int, *, left: bool = False) -> str:
    """``text`` cut to ``width`` characters, ending (``left``: starting) with ``...``."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    return "..." + text[len(text) - width + 3 :] if left else text[: width - 3] + "..."


def wrap_lines(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def tools_label(tools: Iterable[str]) -> str:
    """``bash x3, read_file``: tool names in first-seen order, repeats counted."""
    counts = Counter(tools)
    return ", ".join(f"{t} x{c}" if c > 1 else t for t, c in counts.items()) or "-"


@dataclass(frozen=True, slots=True)
class Col:
    title: str
    align: Literal["<", ">"] = ">"
    flex: bool = False
    """May be narrowed (its cells cut) so the table fits the width."""
    min_width: int = 8
    cut_left: bool = False
    """Cut long cells at the start (file paths: the end says more)."""


def text_table(cols: Sequence[Col], rows: Sequence[Sequence[str] | None], width: int) -> list[str]:
    """An aligned text table no wider than ``width`` (flexible columns are narrowed).

    A ``None`` row is drawn as a rule (before a total row, say).
    """
    widths = [len(c.title) for c in cols]
    for row in rows:
        if row is not None:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    over = sum(widths) + len(GAP) * (len(cols) - 1) - width
    flex = [i for i, c in enumerate(cols) if c.flex]
    while over > 0 and flex:
        widest = max(flex, key=lambda i: widths[i])
        if widths[widest] <= cols[widest].min_width:
            break
        widths[widest] -= 1
        over -= 1

    def line(cells: Sequence[str]) -> str:
        parts = []
        for c, w, cell in zip(cols, widths, cells, strict=True):
            cell = clip(cell, w, left=c.cut_left)
            parts.append(cell.ljust(w) if c.align == "<" else cell.rjust(w))
        return GAP.join(parts).rstrip()

    rule = GAP.join("-" * w for w in widths)
    out = [line([c.title for c in cols]), rule]
    out.extend(rule if row is None else line(row) for row in rows)
    if over > 0:  # narrower than the fixed columns: cut the lines (only for tiny widths)
        out = [clip(text, width) for text in out]
    return out


def label_pairs(pairs: Sequence[tuple[str, str]], width: int) -> list[str]:
    """``label  value`` pairs, two to a line when they fit in ``width``, else one."""
    lw = max(len(label) for label, _ in pairs)
    left = [v for i, (_, v) in enumerate(pairs) if i % 2 == 0]
    vw = max(len(v) for v in left) if left else 0
    cell = lw + 2 + vw
    out: list[str] = []
    if 2 * cell + 4 <= width:
        for i in range(0, len(pairs), 2):
            first = f"{pairs[i][0].ljust(lw)}  {pairs[i][1]}"
            if i + 1 < len(pairs):
                label, value = pairs[i + 1]
                right = clip(f"{label.ljust(lw)}  {value}", width - cell - 4)
                first = first.ljust(cell + 4) + right
            out.append(first.rstrip())
        return out
    return [clip(f"{label.ljust(lw)}  {value}", width) for label, value in pairs]


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def md_cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, line breaks flattened."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(header: Sequence[str], rows: Iterable[Sequence[object]], right: set[int]) -> list[str]:
    out = ["| " + " | ".join(header) + " |"]
    out.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    out.extend("| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows)
    return out


def dumps_json(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def many(n: int, word: str, plural: str | None = None) -> str:
    """``1 error``, ``2 errors`` (``plural`` for irregular words: ``fixes``)."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def common_dir(names: Sequence[str]) -> str:
    """The folder (ending in ``/``) that every name starts with, when there are several."""
    if len(names) < 2:
        return ""
    prefix = names[0][: names[0].rfind("/") + 1]
    for name in names[1:]:
        while prefix and not name.startswith(prefix):
            prefix = prefix[: prefix[:-1].rfind("/") + 1]
    return prefix
