"""The window's checkpoints (``window.MARKS``): a fork of the fold's state shares nothing
the fold changes in place. Behaviour is checked by the property tests of a client that
sends back the output (tests/test_engine_properties.py); this guards the field list."""

from __future__ import annotations

from dataclasses import fields

from ctxwin.steps._foldstate import _CONTAINERS, FoldState

IMMUTABLE = ("int", "float", "bool", "object", "tuple[", "Loc | None")
"""Types of fields a fork may share: values, and tuples of values."""


def test_every_field_of_the_fold_state_is_copied_by_a_fork_or_immutable() -> None:
    """A field added to FoldState must be copied by ``fork`` (a list, dict or set: in
    ``_CONTAINERS``; or handled there by name) or hold a value the fold replaces."""
    by_name = {"cur"}  # Sums, copied by fork itself
    for f in fields(FoldState):
        assert isinstance(f.type, str)
        if f.name in _CONTAINERS or f.name in by_name:
            continue
        assert f.type.startswith(IMMUTABLE), f"{f.name}: {f.type} is not copied by fork"


def test_a_fork_changed_leaves_the_state_it_came_from_as_it_was() -> None:
    state = FoldState()
    state.out.append(None)
    state.cur.append(5)
    state.dropped_set.add(3)
    state.edits_at[1] = []
    twin = state.fork(())
    twin.out.append(None)
    twin.cur[0] = 1
    twin.dropped_set.add(4)
    twin.edits_at[2] = []
    assert (state.out, state.cur[0], state.dropped_set, state.edits_at) == ([None], 5, {3}, {1: []})
    assert twin.cur.prefix(1) == 1
    assert state.cur.prefix(1) == 5


def test_checkpoints_stop_once_histories_grow_as_they_were_sent_again() -> None:
    """One request that parts from the last (a retry) starts the checkpoints; after PLAIN
    requests in a row that extend what was folded, the window keeps none again: the plain
    flow does not pay for them."""
    from ctxwin import Policy
    from ctxwin.steps.window import PLAIN, Window
    from ctxwin.testing import FakeCounter, agent_body

    rounds = [[("read_file", {"path": f"f{n}"}, " ".join(["w"] * 300))] for n in range(30)]
    items = agent_body(rounds)["messages"]
    policy = Policy({"context_window": 4000}, counter=FakeCounter(), format="openai-chat")
    window = next(s for s in policy.steps if isinstance(s, Window))
    points = list(range(4, len(items) + 1, 2))
    policy.apply({"messages": items[: points[10]]})
    policy.apply({"messages": items[: points[8]]})  # a retry of an earlier request
    policy.apply({"messages": items[: points[11]]})
    assert window._marking
    for t in points[12 : 12 + PLAIN + 1]:
        policy.apply({"messages": items[:t]})
    assert not window._marking
    assert window._marks.shared(items) == 0  # none held
