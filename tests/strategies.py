"""Hypothesis strategies shared by the property tests of every wire format.

A *script* is a conversation described neutrally (user turns, assistant text, rounds of tool
calls with their results in some order). Each format has a builder in
``tests/formats/builders/<format>.py`` turning a script into a wire body, so the same
generated conversations exercise every adapter. Damage operations work on the wire list.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import strategies as st

TEXT = st.text(
    alphabet=st.sampled_from([*list("abc xyz.,:{}[]\"'\\\n"), "注", "文", "é", "🙂", "ß"]),
    min_size=1,
    max_size=24,
)
TOOL_NAMES = st.sampled_from(["get_order", "search_flights", "shell", "read_file"])


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any]


@dataclass
class Turn:
    kind: Literal["user", "assistant", "round"]
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    results: list[tuple[int, str, bool]] = field(default_factory=list)
    """(index of the call answered, content, is_error), in the order they are sent."""


Script = list[Turn]


@st.composite
def rounds(draw: st.DrawFn, ids: list[str], reuse: bool) -> Turn:
    n = draw(st.integers(1, 3))
    calls = []
    for _ in range(n):
        if reuse and ids and draw(st.booleans()):
            cid = draw(st.sampled_from(ids))
            if any(c.id == cid for c in calls):
                cid = f"call_{len(ids)}_{len(calls)}"
        else:
            cid = f"call_{len(ids)}_{len(calls)}"
        ids.append(cid)
        calls.append(Call(cid, draw(TOOL_NAMES), {"q": draw(TEXT)}))
    order = draw(st.permutations(range(n)))
    results = [(i, draw(TEXT), draw(st.booleans())) for i in order]
    text = draw(st.one_of(st.just(""), TEXT))
    return Turn("round", text=text, calls=calls, results=results)


@st.composite
def scripts(draw: st.DrawFn, *, reuse_ids: bool = True, max_turns: int = 8) -> Script:
    """A well-formed conversation: starts with a user turn; rounds are always answered."""
    ids: list[str] = []
    script: Script = [Turn("user", text=draw(TEXT))]
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(["user", "assistant", "round", "round"]))
        if kind == "round":
            script.append(draw(rounds(ids, reuse_ids)))
        elif kind == "assistant":
            if script[-1].kind != "assistant":
                script.append(Turn("assistant", text=draw(TEXT)))
        elif script[-1].kind != "user":
            script.append(Turn("user", text=draw(TEXT)))
    return script


Damage = Literal["drop", "duplicate", "move", "inject", "truncate", "swap"]


@st.composite
def damage(
    draw: st.DrawFn, items: list[Any], make_user: Callable[[str], Any]
) -> tuple[list[Any], list[str]]:
    """A damaged copy of a wire list (its elements are the original objects) and what was done."""
    out = list(items)
    done: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        if not out:
            break
        op: Damage = draw(
            st.sampled_from(["drop", "duplicate", "move", "inject", "truncate", "swap"])
        )
        i = draw(st.integers(0, len(out) - 1))
        if op == "drop" and len(out) > 1:
            del out[i]
        elif op == "duplicate":
            out.insert(i + 1, copy.deepcopy(out[i]))
        elif op == "move":
            j = draw(st.integers(0, len(out) - 1))
            out.insert(j, out.pop(i))
        elif op == "inject":
            out.insert(i, make_user("are you still there?"))
        elif op == "truncate" and i > 0:
            del out[i:]
        elif op == "swap" and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        done.append(op)
    return out, done
