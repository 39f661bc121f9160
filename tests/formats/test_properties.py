"""Properties every adapter must have, over generated conversations and generated damage.

Builders live in ``tests/formats/builders/<format>.py``; a format without one is skipped.
"""

from __future__ import annotations

import copy
import importlib
import os
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin._core.model import Message, Opaque, is_reasoning_item
from ctxwin.formats import get_adapter
from tests.strategies import damage, scripts

FORMATS = ["openai_chat", "anthropic", "openai_responses", "gemini"]


def builder(name: str) -> ModuleType:
    try:
        return importlib.import_module(f"tests.formats.builders.{name}")
    except ModuleNotFoundError:
        pytest.skip(f"no builder for {name} yet")


SETTINGS = settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_generated_conversations_round_trip_and_check_clean(name: str, data: st.DataObject) -> None:
    b = builder(name)
    body = b.build(data.draw(scripts(reuse_ids=not getattr(b, "UNIQUE_IDS", False))))
    before = copy.deepcopy(body)
    conv = ctxwin.parse(body, format=b.FORMAT)
    assert ctxwin.render(conv) == body
    assert ctxwin.parse(body).format == b.FORMAT  # detection agrees
    assert [p for p in ctxwin.check(body) if p.severity == "error"] == []
    fixed, fixes = ctxwin.repair(body)
    assert fixes == []
    assert fixed == body
    assert body == before


def _unfollowed_reasoning(msg: Message) -> bool:
    """A reasoning item with an id (OpenAI Responses), which needs an item of its turn after
    it: among results only, it has none, and goes."""
    return is_reasoning_item(msg) and isinstance(b := msg.blocks[0], Opaque) and b.needs_next


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_damaged_conversations_repair_into_valid_ones(name: str, data: st.DataObject) -> None:
    b = builder(name)
    body: dict[str, Any] = b.build(data.draw(scripts()))
    items, ops = data.draw(damage(body[b.CONTAINER], b.user))
    damaged = {**body, b.CONTAINER: items}
    before = copy.deepcopy(damaged)
    adapter = get_adapter(b.FORMAT)
    if all(
        (m.tool_results and m.blocks == m.tool_results) or _unfollowed_reasoning(m)
        for m in adapter.parse(damaged).messages
    ):
        # nothing but results (orphans, once the damage took their calls) and reasoning
        # with nothing of its turn after it: repair would leave no message, and says so
        # rather than return an empty request
        with pytest.raises(ctxwin.InputError, match="nothing"):
            ctxwin.repair(damaged, format=b.FORMAT)
        assert damaged == before, "repair mutated its input"
        return
    fixed, fixes = ctxwin.repair(damaged, format=b.FORMAT)
    assert damaged == before, "repair mutated its input"
    problems = ctxwin.check(fixed, format=b.FORMAT)
    assert [p for p in problems if p.severity == "error"] == [], (ops, fixes)
    # What holds no tool result is never rebuilt: it comes back as the very same object.
    # (Unless a duplicated call id had to be renamed in its turn, or calls split across
    # messages were joined; a reasoning item the damage left with nothing of its turn
    # after it is dropped, and so is a Responses item the damage repeated with its id.)
    if not any(f.code in ("renamed_duplicate_call_id", "merged_split_turn") for f in fixes):
        out_ids = {id(x) for x in fixed[b.CONTAINER]}
        gone = ("dropped_orphan_result", "dropped_duplicate_item")  # an item id twice
        dropped = {f.message_index for f in fixes if f.code in gone}
        parsed = get_adapter(b.FORMAT).parse(damaged).messages
        for k, (raw, msg) in enumerate(zip(items, parsed, strict=True)):
            if not msg.tool_results and k not in dropped:
                assert id(raw) in out_ids, (ops, fixes, raw)
    # Repair is idempotent.
    again, more = ctxwin.repair(fixed, format=b.FORMAT)
    assert more == []
    assert again == fixed
