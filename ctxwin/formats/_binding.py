"""What an Anthropic Messages body says of its thinking blocks' binding (preserved thinking).

A request may ask the API to drop the thinking blocks that fail the prefix check instead of
refusing the request: ``thinking.block_binding.prefix_mismatch_behavior: "drop_block"``
(with the ``thinking-binding-controls-2026-08-01`` beta header, which ctxwin never sees:
a body carrying the field without it is refused by the API, not by ctxwin).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["THINKING_KINDS", "drops_unbound_thinking"]

THINKING_KINDS = frozenset({"thinking", "redacted_thinking"})
"""The block types the prefix check applies to."""


def drops_unbound_thinking(body: object) -> bool:
    """Whether the body asks the API to drop the thinking blocks bound to another prefix."""
    if not isinstance(body, Mapping):
        return False
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    if not isinstance(binding, Mapping):
        return False
    return binding.get("prefix_mismatch_behavior") == "drop_block"
