"""What the integrations share about the recall tool: whether a policy has recall on, and
the tool's name, description and parameters (one schema for every framework)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ctxwin._policy.compile import RECALL_TOOL
from ctxwin.formats._recall import RECALL_DESCRIPTION, RECALL_PARAMETERS

if TYPE_CHECKING:
    from ctxwin._engine import Policy

__all__ = ["RECALL_DESCRIPTION", "RECALL_TOOL", "parameters", "recall_on"]


def recall_on(policy: Policy) -> bool:
    """Whether ``policy`` keeps originals for recall (``recall:`` on, or on for some tool),
    so that an agent under it needs the ``recall`` tool."""
    return policy.recall_enabled


def parameters() -> dict[str, Any]:
    """The recall tool's JSON schema (a copy: frameworks may edit what they are given)."""
    return copy.deepcopy(RECALL_PARAMETERS)
