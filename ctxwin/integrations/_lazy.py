"""Frameworks imported on first use, with an install hint when they are missing."""

from __future__ import annotations

from typing import Any

from ctxwin._lazy import require as lazy_require

__all__ = ["require"]


def require(module: str, extra: str) -> Any:
    """The framework ``module``, or an ``ImportError`` saying ``pip install 'ctxwin[extra]'``
    (see :func:`ctxwin._lazy.require`)."""
    return lazy_require(module, extra, "ctxwin.integrations")
