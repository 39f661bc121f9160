"""What the window's cold pass builds directly instead of through ``dataclasses.replace``
(slow there) is the same as what ``replace`` would build, field by field; the prefix sums
and the shortened arguments it relies on agree with their plain definitions."""

from __future__ import annotations

import dataclasses
import json
import random

from ctxwin._core.model import Message, Opaque, Text, ToolCall, ToolResult
from ctxwin._core.records import Edit
from ctxwin.steps._foldstate import SHORT_ARGUMENT, shorten_arguments
from ctxwin.steps._sums import Sums


def _fields(value: object) -> dict[str, object]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}  # type: ignore[arg-type]


def test_a_message_with_other_blocks_keeps_every_other_field() -> None:
    msg = Message(
        "assistant",
        (Text("a"),),
        raw={"role": "assistant"},
        pristine=True,
        index=7,
        cache=True,
        tied_reasoning=True,
    )
    blocks = (Text("b"), ToolCall("c1", "bash", "{}"))
    assert _fields(msg.with_blocks(blocks)) == _fields(
        dataclasses.replace(msg, blocks=blocks, pristine=False)
    )


def test_a_result_with_other_text_keeps_every_other_field() -> None:
    raw_text = {"type": "text", "text": "old", "cache_control": {"type": "ephemeral"}}
    result = ToolResult(
        "c1",
        (Text("old", raw=raw_text), Opaque("image", {"type": "image"})),
        is_error=True,
        name="bash",
        kind="custom",
        raw={"x": 1},
        pristine=True,
        origin="r-0123456789ab",
    )
    new = result.with_text("new")
    expected = dataclasses.replace(
        result, content=(Text("new", raw=raw_text), result.content[1]), pristine=False
    )
    assert _fields(new) == _fields(expected)
    assert new.raw == {"x": 1}
    assert new.origin == "r-0123456789ab"
    assert not new.pristine


def test_an_edit_numbered_in_a_jump_keeps_every_other_field() -> None:
    edit = Edit("window", "bash", "c1", 900, 20, "f", "n", 4, 3000, 60)
    assert _fields(edit.in_jump(3)) == _fields(dataclasses.replace(edit, jump=3))


def test_prefix_sums_agree_with_plain_sums_under_appends_and_updates() -> None:
    rng = random.Random(0)
    for _ in range(300):
        sums, values = Sums(), []
        for _ in range(rng.randint(0, 80)):
            v = rng.randint(0, 500)
            sums.append(v)
            values.append(v)
            if rng.random() < 0.3:
                i = rng.randrange(len(values))
                values[i] = rng.randint(0, 500)
                sums[i] = values[i]
            n = rng.randint(0, len(values))
            assert sums.prefix(n) == sum(values[:n])
        assert [sums.prefix(n) for n in range(len(values) + 1)] == [
            sum(values[:n]) for n in range(len(values) + 1)
        ]


def test_only_arguments_longer_than_the_limit_as_json_are_cleared() -> None:
    at_limit = "x" * (SHORT_ARGUMENT - 2)  # 48 characters with its quotes: kept
    over = "x" * (SHORT_ARGUMENT - 1)
    escaped = '"' * (SHORT_ARGUMENT // 2)  # short as text, long once escaped
    args = json.dumps({"a": at_limit, "b": over, "c": escaped, "d": 5, "e": [at_limit]})
    out = json.loads(shorten_arguments(args))
    assert out == {"a": at_limit, "b": "[cleared]", "c": "[cleared]", "d": 5, "e": "[cleared]"}
    assert shorten_arguments(json.dumps({"a": at_limit})) == json.dumps({"a": at_limit})
