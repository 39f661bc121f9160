"""Frameworks imported on first use, with the extra to install when one is missing."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["require"]


def require(module: str, extra: str) -> Any:
    """The module ``module``, or an :class:`ImportError` naming ``pip install 'ctxwin[extra]'``.

    Typed as ``Any``: the framework's own types stay out of ctxwin's type checking, which
    runs whether or not the framework is installed."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        raise ImportError(
            f"ctxwin's {extra} integration needs {module.split('.')[0]}: "
            f"pip install 'ctxwin[{extra}]'"
        ) from missing
