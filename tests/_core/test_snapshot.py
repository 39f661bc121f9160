"""No stale edits: a history mutated in place between applies gives what a fresh copy gives."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin._core.snapshot import CHUNK, Fingerprints, matches, same, snapshot
from ctxwin.testing import FakeCounter, agent_body

POLICY = {
    "context_window": 3000,
    "window": {"trigger": 0.5, "target": 0.2, "keep_rounds": 1, "clear_tool_inputs": True},
    "tools": {"*": {"max_tokens": 60}},
}


def body(fmt: ctxwin.FormatName, rounds: int = 12) -> dict[str, Any]:
    uses = [
        [(f"t{r}", {"path": f"src/f{r}.py" * 6}, " ".join(["w"] * (40 + r)))] for r in range(rounds)
    ]
    return agent_body(uses, format=fmt)


def containers(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            containers(v, out)
    elif isinstance(value, list):
        out.append(value)
        for v in value:
            containers(v, out)
    return out


def mutate(items: list[Any], rng: random.Random) -> None:
    """One in-place change somewhere in the history: a field set, popped, or text changed."""
    target = rng.choice(containers(items[rng.randrange(len(items))], []))
    if isinstance(target, dict) and target:
        key = rng.choice(sorted(target))
        choice = rng.randrange(4)
        if choice == 0:
            target["cache_control"] = {"type": "ephemeral"}
        elif choice == 1 and key not in (
            "role",
            "type",
            "id",
            "tool_use_id",
            "call_id",
            "tool_call_id",
            "name",
        ):
            target.pop(key)
        elif isinstance(target[key], str) and key not in ("role", "type"):
            target[key] = (
                target[key] + " changed"
                if key not in ("id", "tool_use_id", "call_id", "tool_call_id")
                else target[key]
            )
        else:
            target.pop("cache_control", None)
    elif (
        isinstance(target, list)
        and target
        and isinstance(target[-1], dict)
        and "type" in target[-1]
    ):
        target.append(copy.deepcopy(target[-1]))


@pytest.mark.parametrize("fmt", ctxwin.FORMATS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(1, 4))
def test_mutating_the_history_in_place_gives_what_a_fresh_copy_gives(
    fmt: ctxwin.FormatName, seed: int, steps: int
) -> None:
    rng = random.Random(seed)
    b = body(fmt)
    key = {
        "openai-chat": "messages",
        "anthropic": "messages",
        "openai-responses": "input",
        "gemini": "contents",
    }[fmt]
    warm = ctxwin.Policy(POLICY, counter=FakeCounter(), format=fmt)
    for _ in range(steps):
        try:
            warm.apply(b)
        except ctxwin.CtxwinError:
            return  # the mutation made the request unreadable: nothing to compare
        mutate(b[key], rng)
        fresh = copy.deepcopy(b)
        try:
            expected = ctxwin.Policy(POLICY, counter=FakeCounter(), format=fmt).apply(fresh)
        except ctxwin.CtxwinError as e:
            with pytest.raises(type(e)):
                warm.apply(b)
            return
        got = warm.apply(b)
        assert got.request == expected.request
        assert got.report.edits == expected.report.edits


def test_moving_an_anthropic_breakpoint_in_place_never_multiplies_breakpoints() -> None:
    """The documented way: pop cache_control from the last message, set it on the new one."""
    b = body("anthropic", rounds=2)
    msgs = b["messages"]
    pol = ctxwin.Policy(POLICY, counter=FakeCounter(), format="anthropic")
    marked: dict[str, Any] | None = None
    for r in range(10):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"x{r}", "name": "f", "input": {}}],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"x{r}", "content": "w " * 80}],
            }
        )
        if marked is not None:
            marked.pop("cache_control")
        marked = msgs[-1]["content"][-1]
        marked["cache_control"] = {"type": "ephemeral"}
        out = pol.apply(b).request
        assert out == ctxwin.Policy(POLICY, counter=FakeCounter()).apply(copy.deepcopy(b)).request
        marks = sum(
            1
            for m in out["messages"]
            for blk in m["content"]
            if isinstance(blk, dict) and "cache_control" in blk
        )
        assert marks == 1


def test_a_chunk_compares_in_one_go_and_a_change_is_found_in_it() -> None:
    raws: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": f"m{i}"}]}
        for i in range(CHUNK * 2 + 5)
    ]
    prints = Fingerprints()
    for r in raws:
        prints.add(r, True)
    prints.seal(raws)
    assert prints.changed(raws, len(raws)) == []
    raws[70]["content"][0]["text"] = "changed"
    raws[2]["content"].append({"type": "text", "text": "more"})
    assert sorted(prints.changed(raws, len(raws))) == [2, 70]
    assert same(snapshot([raws[70]]), snapshot([raws[70]]))


@pytest.mark.parametrize(
    ("key", "new", "matched"),
    [
        ("limit", 1000, True),
        ("t", 0.5, True),
        ("z", -0.0, True),
        ("big", 2**70, True),
        ("limit", 1000.0, False),
        ("limit", True, False),
        ("z", 0.0, False),
    ],
)
def test_a_number_read_afresh_matches_an_equal_one_of_its_kind_only(
    key: str, new: object, matched: bool
) -> None:
    """A body parsed again (a proxy's) holds new number objects: equal ones of the same type
    (and sign, for a zero) are the same data; 1000.0 or True for 1000, 0.0 for -0.0 are
    not (each is sent otherwise)."""
    old: list[Any] = [{"input": {"limit": 1000, "t": 0.5, "z": -0.0, "big": 2**70}}]
    snap = snapshot(old)
    data = json.loads(json.dumps(old))
    data[0]["input"][key] = json.loads(json.dumps(new))
    assert matches(data, snap) is matched
