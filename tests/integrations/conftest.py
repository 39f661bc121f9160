"""Fixtures shared by the integration tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """The messages each LiteLLM mock completion received (what a provider would have got)."""
    main = pytest.importorskip("litellm.main")
    seen: list[list[Any]] = []
    original = main.mock_completion

    def spy(model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(messages))
        return original(model, messages, *args, **kwargs)

    monkeypatch.setattr(main, "mock_completion", spy)
    return seen
