"""Which traces ``ctxwin tune`` searches on and which it holds out (:mod:`ctxwin.tune`):
the traces as (name, body) pairs, split by a hash of their names, the traces of one
conversation kept on one side."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence

from ctxwin._exceptions import InputError
from ctxwin.formats import detect, get_adapter

__all__ = ["named_traces", "split_traces", "trace_messages"]


def split_traces(
    names: Sequence[str], holdout: float, items: Sequence[Sequence[object] | None] | None = None
) -> tuple[list[int], list[int]]:
    """The training and held-out traces (indexes), held out by a hash of their names, each
    taken as a path relative to the folder the traces share (:func:`_relative`), so that
    the split does not depend on how that folder is spelled (``traces``, ``./traces``,
    ``../proj/traces``, an absolute path) nor on the current directory.

    Traces that are one conversation (the same name, or ``items``, the messages of each
    trace, one a prefix of the other's: a trace given twice, or the requests of one session
    logged one per line) go to the same part, so that no held-out trace was searched on."""
    if isinstance(holdout, bool) or not isinstance(holdout, int | float):
        raise TypeError(f"holdout must be a number from 0 to below 1, not {holdout!r:.40}")
    if not 0 <= holdout < 1:
        raise ValueError(f"holdout must be at least 0 and below 1 (a fraction), not {holdout}")
    n = len(names)
    names = _relative(names)
    groups = _conversations(names, items)
    order = sorted(groups, key=lambda g: hashlib.sha256(min(names[i] for i in g).encode()).digest())
    wanted = max(1, min(round(n * holdout), n - 1)) if holdout and n >= 2 else 0
    return _held_out(order, n, wanted)


def _relative(names: Sequence[str]) -> list[str]:
    """``names`` as paths relative to the folder they share (``traces/a.json`` and
    ``/home/me/proj/traces/a.json`` both ``a.json``), normalized (``./traces/../traces``
    is ``traces``); a name that is no path (``"t1"``) stays itself. Names that cannot be
    put so (paths on two drives) are taken as given."""
    try:
        paths = [os.path.abspath(name) for name in names]
        common = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""
        return [os.path.relpath(p, common) for p in paths]
    except ValueError:
        return list(names)


def _held_out(order: list[list[int]], n: int, wanted: int) -> tuple[list[int], list[int]]:
    """The groups of ``order`` (in hash order) held out: as near ``wanted`` traces as whole
    groups can come (the training part keeps one trace at least), the earliest groups in
    hash order among the ways to get there. Taken whole and in hash order as they came, one
    large conversation first in that order was held out past the fraction by far while a
    small one fitted."""
    if not wanted:
        return list(range(n)), []
    sizes = [len(g) for g in order]
    reach = [0] * (len(order) + 1)  # bit t of reach[k]: groups k.. can hold t traces
    reach[-1] = 1
    for k in range(len(order) - 1, -1, -1):
        reach[k] = reach[k + 1] | (reach[k + 1] << sizes[k])
    totals = [t for t in range(1, n) if reach[0] >> t & 1]
    if not totals:
        return list(range(n)), []
    left = min(totals, key=lambda t: (abs(t - wanted), t))
    held: set[int] = set()
    for k, group in enumerate(order):
        if sizes[k] <= left and reach[k + 1] >> (left - sizes[k]) & 1:
            held.update(group)
            left -= sizes[k]
    return [i for i in range(n) if i not in held], sorted(held)


def _conversations(
    names: Sequence[str], items: Sequence[Sequence[object] | None] | None
) -> list[list[int]]:
    """The traces grouped by conversation: the same name, or messages one a prefix of the
    other's (as :func:`trace_messages` gives them: the system prompt first, without cache
    breakpoints; ``None``: a trace that could not be read is in a group of its own name).
    A trace that is the start of several conversations (a first request alike in many
    sessions: "Hi") joins only those equal to it, not the conversations it starts: through
    it, every session would be one group, and nothing could be held out."""
    parent = list(range(len(names)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, name in enumerate(names):
        parent[root(i)] = root(first.setdefault(name, i))
    chains = {i: _prefix_keys(m) for i, m in enumerate(items or ()) if m}
    starting: dict[tuple[int, int], list[int]] = {}  # (length, key): traces starting so
    for j, keys in chains.items():
        for n, key in enumerate(keys, 1):
            starting.setdefault((n, key), []).append(j)
    for i, keys in sorted(chains.items(), key=lambda ik: len(ik[1])):
        n = len(keys)
        longer = sorted((j for j in starting[n, keys[-1]] if j != i), key=lambda j: len(chains[j]))
        one = all(  # each of them starts the next: one conversation
            chains[b][len(chains[a]) - 1] == chains[a][-1] for a, b in itertools.pairwise(longer)
        )
        for j in longer:
            if one or len(chains[j]) == n:  # one conversation; or the same messages
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _prefix_keys(messages: Sequence[object]) -> list[int]:
    """For each length, a key of the messages up to it: two traces' keys at a length are
    equal when they start with the same messages there (a hash of each message's JSON
    chained with the key before it; a trace that cannot be put as JSON gets keys of its
    own), so that telling which traces start which is linear in their messages."""
    keys: list[int] = []
    key = 0
    for msg in messages:
        try:
            text = json.dumps(msg, sort_keys=True, ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            text = f"{id(messages)}:{len(keys)}"
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8)
        digest.update(key.to_bytes(8, "big"))
        key = int.from_bytes(digest.digest(), "big")
        keys.append(key)
    return keys


def trace_messages(body: object, format: str | None) -> Sequence[object] | None:
    """The messages of a trace, as listed in its body but without their cache breakpoints,
    after its system prompt where its format keeps it apart (None when it cannot be read:
    the replay names it). A breakpoint moves from request to
    request (``cache_control`` on the last block of each: the requests of one session would
    be no prefix of the next), so they are compared as the replay's cache model compares
    them (:meth:`~ctxwin.formats.Adapter.unmarked`)."""
    try:
        adapter = get_adapter(format or detect(body))
        messages = [adapter.unmarked(m) for m in adapter.items_of(adapter.listed(body))]
    except InputError:
        return None
    return [*(("system", v) for v in adapter.system(body)), *messages]


def named_traces(traces: object) -> list[tuple[str, object]]:
    """``traces`` as (name, body) pairs, a name a string or a path (``os.PathLike``);
    anything else a TypeError, and no trace at all a ValueError."""
    if isinstance(traces, str | bytes | Mapping) or not isinstance(traces, Iterable):
        raise TypeError(f"traces must be a list of (name, body) pairs, not {type(traces).__name__}")
    out = []
    for i, pair in enumerate(traces):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(
                f"traces are (name, body) pairs, e.g. [('a.json', body), ...]; trace {i} is "
                f"a {type(pair).__name__}"
                + (f" of {len(pair)}" if isinstance(pair, tuple | list) else "")
            )
        name, body = pair
        if not isinstance(name, str | os.PathLike):
            raise TypeError(
                f"trace {i}: a name must be a string or a path, not {type(name).__name__}"
            )
        out.append((str(name), body))
    if not out:
        raise ValueError("tune needs at least one trace: traces is empty")
    return out
