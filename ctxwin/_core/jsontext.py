"""JSON text as ctxwin writes it."""

from __future__ import annotations

import json

__all__ = ["compact_json"]


def compact_json(value: object) -> str:
    """JSON as ctxwin writes it: compact, non-ASCII kept as is, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
