"""Integrations import their framework on first use, and say what to install without it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ctxwin.integrations._lazy import require


def test_a_missing_framework_names_the_extra_to_install() -> None:
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[pydantic-ai\]'"):
        require("no_such_framework_xyz.messages", "pydantic-ai")


def test_importing_the_integrations_imports_no_framework() -> None:
    code = (
        "import sys\n"
        "import ctxwin.integrations.pydantic_ai, ctxwin.integrations.openai_agents\n"
        "import ctxwin.integrations.litellm\n"
        "print(sorted(m for m in ('pydantic_ai', 'agents', 'litellm') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
