"""The chunks of an OpenAI Responses ``shell_call_output``: one per command, each with its
``stdout``, its ``stderr`` and its ``outcome``.

The steps read a shell output's text as its streams that say something (each chunk's
stdout, then its stderr) joined by newlines, and edit it as one text. Written back into the
chunks the output came with (:func:`shell_output`), the edited text is spread over them
again, so every command keeps its chunk and its outcome, and what is left of its output
stays in the stream it came from:

- what the edit kept of the original's start and of its end (a cap's head and tail) goes
  back where it was;
- what the edit wrote in between (a cap's notice) goes in the stream where the cut begins;
  a text written whole in place of the output (a selection, a summary, a placeholder), in
  the first stream;
- a stream the edit took away whole is left empty (``""``).

An edited text that cannot be spread so (it would read back otherwise) goes whole in the
first chunk's stdout, the other chunks' streams emptied: no command's output is ever given
another's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxwin._core.model import Opaque, Text

__all__ = ["shell_chunk", "shell_output", "shell_text"]

_STREAMS = ("stdout", "stderr")


def shell_text(chunk: object) -> str:
    """What a ``shell_call_output`` chunk says: its stdout, then its stderr ("" for a chunk
    with neither, which the steps leave as it is: its outcome alone is no text)."""
    if not isinstance(chunk, Mapping):
        return ""
    streams = (chunk.get("stdout"), chunk.get("stderr"))
    return "\n".join(t for t in streams if isinstance(t, str) and t)


def shell_chunk(part: Text | Opaque, is_error: bool) -> object:
    """A ``shell_call_output`` chunk of an output ctxwin made (a synthetic output), or of an
    output that came without chunks: as it came, or with the text a step wrote in its
    stdout (its outcome kept), or a new one holding the text."""
    raw = part.raw
    if isinstance(part, Opaque) or (part.pristine and isinstance(raw, Mapping)):
        return raw
    if isinstance(raw, Mapping):
        return {**raw, "stdout": part.text, "stderr": ""}
    if is_error:
        return {"stdout": "", "stderr": part.text, "outcome": {"type": "exit", "exit_code": 1}}
    return {"stdout": part.text, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}


def shell_output(chunks: Sequence[object], text: str) -> list[object] | None:
    """The chunks an output came with, holding ``text`` (its edited text) instead of theirs,
    spread as the module docstring says; None when none of them is a chunk ctxwin can
    write into (no mapping)."""
    streams = [
        (i, key, t)
        for i, chunk in enumerate(chunks)
        if isinstance(chunk, Mapping)
        for key in _STREAMS
        if isinstance(t := chunk.get(key), str) and t
    ]
    if text == "\n".join(t for _, _, t in streams):
        return list(chunks)
    if streams:
        spread = _spread([t for _, _, t in streams], text)
        if spread is not None:
            texts = {(i, k): new for (i, k, _), new in zip(streams, spread, strict=True)}
            out = _written(chunks, texts)
            if "\n".join(t for c in out if (t := shell_text(c))) == text:
                return out
    first = next((i for i, c in enumerate(chunks) if isinstance(c, Mapping)), None)
    if first is None:
        return None
    emptied = {(i, k): "" for i, k, _ in streams}
    return _written(chunks, {**emptied, (first, "stdout"): text, (first, "stderr"): ""})


def _written(chunks: Sequence[object], texts: Mapping[tuple[int, str], str]) -> list[object]:
    """``chunks`` with the streams ``texts`` names (chunk, key) holding those texts."""
    out: list[object] = []
    for i, chunk in enumerate(chunks):
        new = {k: t for (j, k), t in texts.items() if j == i}
        out.append({**chunk, **new} if new and isinstance(chunk, Mapping) else chunk)
    return out


def _spread(streams: list[str], text: str) -> list[str] | None:
    """``text`` cut into one piece per stream of ``streams`` (whose texts, joined by
    newlines, it was edited from): what it kept of their start and of their end where it
    was, what it wrote in between in the stream where the cut begins. None when that
    would need a line break the text has not."""
    whole = "\n".join(streams)
    spans, start = [], 0
    for s in streams:
        spans.append((start, start + len(s)))
        start += len(s) + 1
    # the head kept: up to a line break of ``text`` (the cap joins head and notice so)
    p = _common_prefix(whole, text)
    while 0 < p < len(text) and text[p] != "\n":
        p -= 1
    # the tail kept: from just after a line break of ``text``
    t0 = len(text) - _common_suffix(whole[p:], text[p:])
    while 0 < t0 < len(text) and text[t0 - 1] != "\n":
        t0 += 1
    q = len(whole) - (len(text) - t0)
    middle = text[p:t0]
    m = next(k for k, (a, b) in enumerate(spans) if a <= p <= b)
    if p == spans[m][1] and middle.startswith("\n") and m + 1 < len(spans):
        m, p, middle = m + 1, spans[m + 1][0], middle[1:]  # the cut begins in the next
    j = next((k for k, (a, b) in enumerate(spans) if a <= q < b), None)
    mids = {m: middle}
    if j is not None and j > m:  # the cut ends in a later stream: split what it wrote
        i = middle.rfind("\n")
        if i < 0:
            return None
        mids = {m: middle[:i], j: middle[i + 1 :]}
    return [
        whole[a : min(b, p)] + mids.get(k, "") + whole[max(a, q) : b]
        for k, (a, b) in enumerate(spans)
    ]


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i
