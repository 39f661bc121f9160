"""Shell output chunks written back after an edit: every command keeps its chunk and its
outcome, and the chunks read back as the edited text (so the policy applied to its own
output finds what it wrote)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ctxwin.formats._responses_shell import shell_output, shell_text

STREAM = st.text(alphabet="ab\n[]", max_size=12)


def _chunk(stdout: str, stderr: str, code: int) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": stderr, "outcome": {"type": "exit", "exit_code": code}}


CHUNKS = st.lists(st.builds(_chunk, STREAM, STREAM, st.integers(0, 2)), min_size=1, max_size=4)


def _read(chunks: list[Any]) -> str:
    return "\n".join(t for c in chunks if (t := shell_text(c)))


def _kept(chunks: list[Any], out: list[Any]) -> None:
    assert len(out) == len(chunks)
    assert [c["outcome"] for c in out] == [c["outcome"] for c in chunks]
    assert [set(c) for c in out] == [set(c) for c in chunks]


@given(CHUNKS, st.data())
def test_a_cut_reads_back_with_its_notice_in_one_chunk(
    chunks: list[Any], data: st.DataObject
) -> None:
    whole = _read(chunks)
    head = data.draw(st.integers(0, len(whole)))
    tail = data.draw(st.integers(head, len(whole)))
    note = data.draw(st.sampled_from(["[... 9 of 40 tokens cut ...]", "cut", ""]))
    text = "\n".join(p for p in (whole[:head], note, whole[tail:]) if p)
    out = shell_output(chunks, text)
    assert out is not None
    _kept(chunks, out)
    assert _read(out) == text
    if note and "\n" not in note and head > 0 and tail < len(whole):  # the cut's own place
        assert sum(note in shell_text(c) for c in out) == 1


@given(CHUNKS, st.text(max_size=30))
def test_any_text_reads_back_and_every_command_keeps_its_outcome(
    chunks: list[Any], text: str
) -> None:
    out = shell_output(chunks, text)
    assert out is not None
    _kept(chunks, out)
    assert _read(out) == text


def test_a_text_written_whole_goes_in_the_first_stdout() -> None:
    chunks = [_chunk("a\nb\n", "", 0), _chunk("", "no such file", 1)]
    out = shell_output(chunks, "[shell result cleared (40 tokens)]")
    assert out == [
        _chunk("[shell result cleared (40 tokens)]", "", 0),
        _chunk("", "", 1),
    ]
