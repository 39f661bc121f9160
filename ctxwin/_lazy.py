"""Optional packages imported on first use, with the install hint when they are missing.

The one place that says ``pip install 'ctxwin[extra]'``: summarizers, stores and
integrations all import their SDK, driver or framework through :func:`require`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["require"]


def require(module: str, extra: str, who: str) -> Any:
    """The module ``module``, or an ``ImportError`` saying that ``who`` needs it and how to
    install it. Typed ``Any`` on purpose: the packages are optional, so ctxwin type-checks
    without them."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{who} needs the {module.split('.')[0]!r} package: pip install 'ctxwin[{extra}]' ({e})"
        ) from e
