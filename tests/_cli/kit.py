"""What the command-line tests share: running ``ctxwin`` in-process, and the small policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxwin._cli import main
from tests.builders import SMALL_POLICY_YAML


def cli(argv: list[str | Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the command line on ``argv``: its exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def small_policy(tmp_path: Path) -> Path:
    """The small test policy written to ``tmp_path/policy.yaml``."""
    path = tmp_path / "policy.yaml"
    path.write_text(SMALL_POLICY_YAML, encoding="utf-8")
    return path
