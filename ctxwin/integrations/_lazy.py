"""Frameworks imported on first use, with an install hint when they are missing."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["require"]


def require(module: str, extra: str) -> Any:
    """The module ``module``, or an ``ImportError`` saying ``pip install 'ctxwin[extra]'``.

    Typed ``Any`` on purpose: the frameworks are optional, so ctxwin type-checks without
    them installed."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"ctxwin.integrations needs {module.split('.')[0]} for this: "
            f"pip install 'ctxwin[{extra}]' ({e})"
        ) from e
