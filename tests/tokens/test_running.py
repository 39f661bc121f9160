"""``RunningReads``: what the meter reads of each request of a history, kept from one request
to the next, is what it reads of that request alone: for a history that grows (new turns of
the user's own making earlier reasoning unread), that forks, or comes back shorter."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin._core.memo import Memo, PrefixCache
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter
from ctxwin.tokens._meter import TokenMeter
from ctxwin.tokens._running import RunningReads
from tests.strategies import damage, scripts


@pytest.mark.parametrize("name", ["openai_responses", "openai_chat"])
@settings(
    max_examples=int(os.environ.get("CTXWIN_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_each_request_reads_as_the_meter_reads_it_alone(name: str, data: st.DataObject) -> None:
    b = importlib.import_module(f"tests.formats.builders.{name}")
    adapter = get_adapter(b.FORMAT)
    meter = TokenMeter(FakeCounter(), adapter.overheads)
    body: dict[str, Any] = b.build(data.draw(scripts()))
    whole = body[b.CONTAINER]
    damaged, _ = data.draw(damage(whole, b.user))
    memo: Memo = Memo()
    prefix: PrefixCache[Any] = PrefixCache()
    reads = RunningReads(meter)
    for items in (whole, damaged, whole[: len(whole) // 2], whole):
        for t in range(1, len(items) + 1):
            messages = adapter.parse({**body, b.CONTAINER: items[:t]}, memo, prefix).messages
            reads.read(messages)
            read = meter.read(messages)
            kept = [read[k] for k in meter.kept(messages)]
            assert reads.unread == meter.unread(messages)
            assert reads.total() == sum(read)
            assert [reads.kept(j) for j in range(len(kept) + 1)] == [
                sum(kept[:j]) for j in range(len(kept) + 1)
            ]
