"""Pairing on the neutral model: by position, under the rules a conversation carries."""

from __future__ import annotations

import random

import pytest

from ctxwin._core.model import Loc, Message, Opaque, PairingRules, Text, ToolCall, ToolResult
from ctxwin._core.pairing import Linker, link
from tests._core.neutral import ADJACENT, ANYWHERE, GROUPED, calls, conv, result, results, user


def test_each_result_answers_the_call_with_its_id_in_the_latest_turn() -> None:
    """Ids reused across turns pair with the nearest turn, not the first one."""
    c = conv(ADJACENT, user("go"), calls("a"), results("a"), calls("a"), results("a"))
    p = c.pairing
    assert p.call_of == {(2, 0): (1, 0), (4, 0): (3, 0)}
    assert [r.calls for r in p.rounds] == [((1, 0),), ((3, 0),)]
    assert p.orphans == ()
    assert p.duplicates == ()


def test_a_second_result_for_an_answered_call_is_a_duplicate() -> None:
    c = conv(ADJACENT, user("go"), calls("a"), results("a"), results("a"))
    assert c.pairing.duplicates == (((3, 0), (1, 0)),)


def test_a_result_for_no_call_is_an_orphan_unless_the_calls_live_on_the_server() -> None:
    msgs = (user("go"), results("x"))
    assert conv(ADJACENT, *msgs).pairing.orphans == ((1, 0),)
    assert link(msgs, ADJACENT, server_state=True).orphans == ()


def test_calls_without_ids_pair_by_order_and_name() -> None:
    asked = Message("assistant", (ToolCall(None, "f", "{}"), ToolCall(None, "g", "{}")))
    answers = Message(
        "user",
        (
            ToolResult(None, (), name="g"),
            ToolResult(None, (), name="f"),
        ),
    )
    c = conv(GROUPED, user("go"), asked, answers)
    assert c.pairing.call_of == {(2, 0): (1, 1), (2, 1): (1, 0)}


def test_an_id_less_result_leaves_the_call_a_later_result_of_its_message_names() -> None:
    """Results naming their call by id pair first, the id-less ones of the same message with
    the calls left: the id-less one took x, the one naming x became a duplicate, y missing."""
    rules = PairingRules(
        turn="message",
        placement="next_message",
        carrier="grouped",
        carrier_role="user",
        ids_optional=True,
    )
    asked = Message("assistant", (ToolCall("x", "f", "{}"), ToolCall("y", "f", "{}")))
    answers = Message("user", (ToolResult(None, (), name="f"), ToolResult("x", (), name="f")))
    p = conv(rules, user("go"), asked, answers).pairing
    assert p.call_of == {(2, 0): (1, 1), (2, 1): (1, 0)}
    assert p.duplicates == p.orphans == ()
    again = Message("user", (ToolResult(None, (), name="f"), ToolResult("z", (), name="f")))
    anonymous = Message("assistant", (ToolCall(None, "f", "{}"), ToolCall(None, "f", "{}")))
    p = conv(rules, user("go"), anonymous, again).pairing
    assert p.call_of == {(2, 0): (1, 0), (2, 1): (1, 1)}  # no id found: in order, by name


def test_consecutive_assistant_items_are_one_turn_when_the_rules_say_so() -> None:
    msgs = (user("go"), calls("a"), calls("b"), results("a"), results("b"))
    assert len(conv(ANYWHERE, *msgs).pairing.rounds) == 1
    assert len(conv(ADJACENT, *msgs).pairing.rounds) == 2


def test_linking_resumes_where_the_previous_request_stopped() -> None:
    msgs = [user("go"), calls("a"), results("a"), calls("b"), Message("tool", (result("b"),))]
    linker = Linker(ADJACENT)
    linker.feed(msgs[:3])
    first = linker.pairing()
    linker.feed(msgs)
    assert first.call_of == {(2, 0): (1, 0)}
    assert linker.pairing() == link(msgs, ADJACENT)


def test_blocks_tied_to_a_call_never_opened_are_noted_in_request_order() -> None:
    """A server's result or a program's call with no opening block before it; what such a
    block opens is not opened (its own blocks go with it), what another block opens is."""
    opener = Message("assistant", (Opaque("server_tool_use", opens="p1"),))
    stray = Message(
        "assistant",
        (
            Opaque("server_tool_use", opens="s2", tie="gone"),  # made by a gone program
            Opaque("web_search_tool_result", tie="s2", closes=True),
            ToolCall("c1", "f", "{}", tie="p1"),
            ToolCall("c2", "f", "{}", tie="gone"),
        ),
    )
    msgs = (user("go"), opener, stray, Message("user", (result("c1"), result("c2"))))
    assert link(msgs, GROUPED).unopened == ((2, 0), (2, 1), (2, 3))
    assert link(msgs, GROUPED, server_state=True).unopened == ()
    linker = Linker(GROUPED)
    linker.feed(msgs[:2])
    assert linker.pairing().unopened == ()
    linker.feed(msgs)
    assert linker.pairing() == link(msgs, GROUPED)


KINDS = PairingRules(
    turn="consecutive",
    placement="anywhere_after",
    carrier="one_per_message",
    carrier_role="tool",
    answers=frozenset({("function", "function"), ("custom", "custom")}),
)
"""OpenAI Responses' rules with call kinds: an output answers a call of its own kind."""


class _Counted(dict[Loc, Loc]):
    """A linker's answered calls, counting how often a call is looked up in them."""

    looked = 0

    def __contains__(self, key: object) -> bool:
        self.looked += 1
        return super().__contains__(key)


class _Read(list[Message]):
    """Messages counting how often one is read (a call's kind, its turn's messages)."""

    reads = 0

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().__getitem__(i)


def _same_id_work(rules: PairingRules, rounds: int) -> int:
    """The calls a linker looks at to pair ``rounds`` rounds of one call and its result,
    every call with the id ``call_0`` (an agent numbering its calls per turn): lookups in
    its answered calls and reads of the messages."""
    msgs = _Read([user("go")])
    for r in range(rounds):
        kind = "custom" if r % 3 == 0 else "function"
        msgs.append(Message("assistant", (ToolCall("call_0", "f", "{}", kind=kind),)))
        msgs.append(Message("tool", (ToolResult("call_0", (Text("ok"),), kind=kind),)))
    linker = Linker(rules)
    linker.answered = answered = _Counted()
    linker.feed(msgs)
    pairing = linker.pairing()
    assert pairing.call_of == {(2 * r + 2, 0): (2 * r + 1, 0) for r in range(rounds)}
    assert pairing.duplicates == pairing.orphans == ()
    return answered.looked + msgs.reads


@pytest.mark.parametrize("rules", [ADJACENT, KINDS], ids=["one kind", "call kinds"])
def test_pairing_calls_that_share_one_id_takes_work_linear_in_them(rules: PairingRules) -> None:
    """Each result finds its call without walking every earlier call of its id: twice the
    rounds, at most twice the calls looked at (it was every earlier one, per result)."""
    small, large = _same_id_work(rules, 300), _same_id_work(rules, 600)
    assert large <= 2 * small + 10


def test_calls_sharing_ids_pair_alike_fed_at_once_or_request_by_request() -> None:
    """Results of kinds answering some kinds of call only, ids shared within and across
    turns, some answered twice or never: a linker resumed at each request pairs as one that
    reads the whole history (the calls still waiting are kept from one request to the next)."""
    rng = random.Random(5)
    for _ in range(200):
        msgs = [user("go")]
        for _ in range(rng.randint(1, 8)):
            turn = [
                ToolCall(rng.choice("ab"), "f", "{}", kind=rng.choice(("function", "custom")))
                for _ in range(rng.randint(1, 3))
            ]
            msgs.append(Message("assistant", tuple(turn)))
            for call in rng.sample(turn, rng.randint(0, len(turn))) * rng.choice((1, 1, 2)):
                kind = call.kind if rng.random() < 0.8 else "function"
                msgs.append(Message("tool", (ToolResult(call.id, (Text("ok"),), kind=kind),)))
        linker = Linker(KINDS)
        for n in sorted(rng.sample(range(1, len(msgs) + 1), min(3, len(msgs)))):
            linker.feed(msgs[:n])
            assert linker.pairing() == link(msgs[:n], KINDS)


def _forward_copies(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """The entries the linker copies into sets to pair ``n`` results that stand before
    their calls (each paired forward with the call after it)."""
    import builtins

    from ctxwin._core import pairing as module

    copied = 0

    def counting_set(*args):  # type: ignore[no-untyped-def]
        nonlocal copied
        made = builtins.set(*args)
        copied += len(made)
        return made

    monkeypatch.setattr(module, "set", counting_set, raising=False)
    msgs = [user("go"), *(Message("tool", (result(f"c{i}"),)) for i in range(n))]
    msgs.append(Message("assistant", tuple(ToolCall(f"c{i}", "f", "{}") for i in range(n))))
    linker = Linker(ADJACENT)
    linker.feed(msgs)
    pairing = linker.pairing()
    assert pairing.call_of == {(1 + i, 0): (n + 1, i) for i in range(n)}
    assert pairing.orphans == ()
    monkeypatch.undo()
    return copied


def test_results_before_their_calls_pair_forward_in_work_linear_in_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each result paired forward adds its call to the calls already taken; the set of them
    is not built again from every earlier pairing for each result (16,000 results before
    their calls took 4.5 s to check, 0.57 s now)."""
    small, large = _forward_copies(monkeypatch, 200), _forward_copies(monkeypatch, 400)
    assert large <= 2 * small + 10
