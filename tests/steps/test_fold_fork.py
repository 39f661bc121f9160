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
