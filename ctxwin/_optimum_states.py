"""The states of the optimum's programme (:mod:`ctxwin._optimum`): the sums over a layout
that every request's states use (:class:`Tables`, one per frame), and each request's
admissible states ``(b, c)``, the oldest ``b`` units dropped and ``c`` rounds cleared, with
their sizes (:class:`Step`, from :func:`new_step`): those that fit the window, the rounds
the window may clear as it sees them, the user message its drops keep (in place after the
head, or not), and the kept rounds yielding to the window when nothing else fits it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, pairwise

from ctxwin._layout import Layout

__all__ = ["Step", "Tables", "new_step"]

_INF = float("inf")


class Tables:
    """Sums over a layout that every request's states use."""

    def __init__(self, lay: Layout, keep_rounds: int, before: Tables | None = None) -> None:
        """With ``before``, the tables of the frame before, whose sums over rounds it keeps."""
        self.lay = lay
        new = set(lay.hidden) - set(before.lay.hidden) if before is not None else set()
        clears = dict(lay.clears)
        self.unread = [(m, clears.get(m)) for m in sorted(new)]
        """The messages the provider stopped reading with this frame, and the round each
        is cleared with (see :meth:`cap`)."""
        self.cum = [0]
        for s in lay.saves:
            self.cum.append(self.cum[-1] + s)
        head = lay.prefix[lay.drop_start]
        self.dropped = [0] + [lay.prefix[e + 1] - head for e in lay.unit_end]
        """Tokens of the oldest ``b`` units (before clearing)."""
        self.head = head
        """What a request reads from the cache after a drop: the envelope and the head."""
        self.kept_text = [0]
        """What the window may have kept of the oldest ``b`` units through its drops: the
        unit of the last user message among them, and of what opens its turn (Anthropic's
        thinking; of the head's user message when none is among them). A drop keeps the
        latest user message, which is that one when it lies among the units dropped (any
        later one would be the latest), and takes one kept before: it holds one, no other.
        With it, the user's words sent after results in a later message among them, the
        last such (:attr:`.Layout.words`): a drop keeps those words, not their unit."""
        ends = lay.unit_end
        said = [k for k, _ in lay.words]
        first_of = [lay.drop_start, *(e + 1 for e in ends[:-1])]  # each unit's first message
        self.unit_tokens = [
            lay.prefix[e + 1] - lay.prefix[f]
            for f, e in zip(first_of[: len(ends)], ends, strict=True)
        ]
        self.held: list[tuple[int, ...]] = [()]
        """The units the oldest ``b`` hold in place through their drops, oldest first: those
        of :attr:`kept_text`, unless the last of them is the ``b``-th unit (dropping ``b``
        units but for it is dropping one fewer)."""
        self.words: list[tuple[int, int]] = [(-1, 0)]
        """The user's words the oldest ``b`` hold in place after those units, as a message of
        their own (:attr:`.Layout.words`: the message, its words' tokens; -1: none): those of
        :attr:`kept_text`, where the window keeps them without their round."""
        for b in range(1, len(ends) + 1):
            self._hold(b, said)
        self.reached: int = before.reached if before is not None else 0
        """The most units a request so far may drop (see :func:`new_step`)."""
        self.end_max: list[int]
        self.rounds_in: list[int]
        self.seen: list[int]
        if before is not None:
            self.end_max, self.rounds_in, self.seen = before.end_max, before.rounds_in, before.seen
        else:
            self.end_max = list(accumulate(lay.round_end, max))
            self.rounds_in = [0] + [bisect_right(lay.round_start, e) for e in lay.unit_end]
            """Rounds inside the oldest ``b`` units."""
            calls = lay.round_call or tuple(lay.round_start)
            self.seen = [
                max(0, min(_present(lay, k), sum(1 for c in calls if c < k) - keep_rounds))
                for k in range(len(lay.prefix))
            ]
            """The rounds eligible as the window sees them after the first ``k`` messages."""
        n = len(lay.prefix)
        self.holds = [self.held_in(b, n)[0] + self.words[b][1] for b in range(len(self.held))]
        """The tokens the oldest ``b`` hold in place, the units as cleared (0: none)."""
        self.first = [
            held[0] if held else bisect_left(ends, w) if w >= 0 else -1
            for held, (w, _) in zip(self.held, self.words, strict=True)
        ]
        """The first unit the oldest ``b`` hold of (-1: none): the words' when they hold
        no other."""
        self.keys = {f for f in self.first if f >= 0}
        """The first units held by some ``b``."""
        self.spoken = sorted({*lay.user_texts, *said})
        """The messages with the user's words (see :meth:`words_at`)."""
        self._firsts()

    def _hold(self, b: int, said: list[int]) -> None:
        """Add what the oldest ``b`` units keep through drops to :attr:`kept_text`,
        :attr:`held` and :attr:`words` (``said``: the messages of :attr:`.Layout.words`)."""
        lay, ends = self.lay, self.lay.unit_end
        u = bisect_right(lay.user_texts, ends[b - 1]) - 1
        held = {bisect_left(ends, lay.user_texts[u])} if u >= 0 else set()  # its unit
        opener = lay.head_opener if u < 0 else lay.openers[u] if lay.openers else -1
        if lay.drop_start <= opener <= ends[b - 1]:
            held.add(bisect_left(ends, opener))
        w = bisect_right(said, ends[b - 1]) - 1
        words = (-1, 0)  # none, or none apart from a unit held whole
        if w >= 0 and (u < 0 or said[w] > lay.user_texts[u]):
            words = (-1, 0) if bisect_left(ends, said[w]) in held else lay.words[w]
        self.kept_text.append(sum(self.unit_tokens[i] for i in held) + words[1])
        whole = held and (max(held) < b - 1 or words[0] >= 0)
        self.held.append(tuple(sorted(held)) if whole else ())
        self.words.append(words)

    def held_in(self, b: int, n: int) -> tuple[int, int]:
        """The tokens of the units the oldest ``b`` hold that a request of ``n`` messages
        holds, from the first on, as cleared (their rounds count as cleared, as in the
        dropped units) and as they came."""
        cleared = whole = 0
        ends, inside = self.lay.unit_end, self.rounds_in
        for i in self.held[b]:
            if ends[i] >= n:
                break
            whole += self.unit_tokens[i]
            cleared += self.unit_tokens[i] - (self.cum[inside[i + 1]] - self.cum[inside[i]])
        return cleared, whole

    def words_at(self, b: int, n: int) -> tuple[int, int]:
        """The words of :attr:`words` a request of ``n`` messages holds: while they are the
        latest the user said. Once the user speaks again, the window's next drop takes them
        (until then they stay: a relaxation, the family's state is the smaller)."""
        w = self.words[b]
        if w[0] < 0 or self.spoken[bisect_left(self.spoken, n) - 1] == w[0]:
            return w
        return -1, 0

    def holds_at(self, b: int, n: int) -> int:
        """:attr:`holds` in the request of ``n`` messages (see :meth:`words_at`)."""
        return self.holds[b] - self.words[b][1] + self.words_at(b, n)[1]

    def held_read(self, b: int, n: int, floor: int, words: bool) -> int:
        """What a request holding in place what the oldest ``b`` hold reads from the cache
        after a drop, where the request before, of ``n`` messages, had that right after the
        head too: the head and the units held (as cleared; against ``floor`` as they came),
        and with ``words``, the user's words (only one holding the same words had them)."""
        cleared, whole = self.held_in(b, n)
        said = self.words[b][1] if words else 0
        return self.head + cleared + said if self.head + whole + said >= floor else 0

    def _firsts(self) -> None:
        """Where clearing each round changes the request first (it differs per frame)."""
        lay = self.lay
        known = [f for f in lay.first if f is not None]
        self.ordered = all(a <= b for a, b in pairwise(known))
        nxt: list[int | None] = [None] * (len(lay.first) + 1)
        for r in range(len(lay.first) - 1, -1, -1):
            nxt[r] = lay.first[r] if lay.first[r] is not None else nxt[r + 1]
        self.next_first = nxt
        """The first message changed by clearing round ``r`` or the next one that changes one."""

    def cap(self, b: int, p: int) -> int:
        """Where a request of this frame stops sharing a prefix with one of the frame before
        in state ``(b, p)``: the first message it read and the provider now drops (one its
        drops or clearings took off was not read; see :mod:`ctxwin._layout`)."""
        lay = self.lay
        gone = lay.unit_end[b - 1] if b else -1
        for m, r in self.unread:
            if not (lay.drop_start <= m <= gone or (r is not None and r < p)):
                return m
        return len(lay.prefix)

    def ended(self, x: int) -> int:
        """How many of the oldest rounds all end before message ``x``."""
        return bisect_left(self.end_max, x)

    def cut(self, b: int, c: int) -> int:
        """Tokens the state ``(b, c)`` takes off the request."""
        return self.dropped[b] + self.cum[c] - self.cum[self.rounds_in[b]]

    def must_drop(self, since: int, n: int, b: int, window: int) -> bool:
        """Whether the window may have had to drop more after ``b`` units, between the
        requests of ``since`` and ``n`` messages: at some message, everything eligible
        then cleared does not fit (with the user message it may have kept). The window
        looks after each message, and sees a round begin only at its first call."""
        kept, inside, prefix = self.kept_text[b], self.rounds_in[b], self.lay.prefix
        return any(
            prefix[k] - self.cut(b, max(self.seen[k], inside)) + kept > window
            for k in range(since + 1, n + 1)
        )


@dataclass(slots=True)
class Step:
    """One request: its admissible states ``(b, c)`` with their cheapest cost so far (flat,
    ``b * (eligible + 1) + c``) and where each came from; then the same states holding the
    units of :attr:`Tables.held` in place (from :attr:`half` on)."""

    n: int
    eligible: int
    """The most rounds a state may count as cleared (dropped kept rounds included)."""
    units: int
    sizes: list[int]
    cost: list[float]
    back: array[int]
    t: Tables
    """The tables of the request's frame."""

    @property
    def width(self) -> int:
        return self.eligible + 1

    @property
    def half(self) -> int:
        """The flat index of the first state that holds units in place."""
        return (self.units + 1) * (self.eligible + 1)

    def deepest(self) -> int:
        """The most units an admissible state a drop may go into drops (one holding units in
        place may drop more than any that does not, and the most :attr:`units` may not fit
        at all; one holding words no longer held comes with no drop: :func:`new_step`)."""
        return max(b for j in range(len(self.sizes)) if self.entered(j) for b in self.state(j)[1:2])

    def entered(self, j: int) -> bool:
        """Whether a drop may go into the state ``j``: admissible, and holding what it holds
        in place (not the words of a state that held them, the user having spoken since)."""
        h, b, _ = self.state(j)
        return self.sizes[j] >= 0 and (not h or self.t.holds_at(b, self.n) > 0)

    def state(self, j: int) -> tuple[int, int, int]:
        """``(h, b, c)`` of the flat state ``j``: ``h`` 1 where it holds units in place."""
        h, rest = divmod(j, self.half)
        b, c = divmod(rest, self.eligible + 1)
        return h, b, c


def new_step(t: Tables, n: int, keep_rounds: int, window: int) -> Step:
    """The request of ``n`` messages with the sizes of its states; those over the window
    are out (when none fits, all but the closest, everything eligible dropped and nothing
    held; and holding units in place, the closest, everything eligible dropped, where it
    does not fit either: the window, which holds them, is over it there too). A state that
    held only the user's words, which they have said more after since, holds nothing, as
    :meth:`Tables.words_at` says, but the window still holds them until its next drop: that
    state stays, sized without them, reached from the states that held them without a
    drop, the window's schedule, and reads its cache as the window's with them (the
    minimum prefix counting them), until a drop.

    As the window's drops do, the kept rounds yield to the window: when dropping every unit
    before them cannot fit it, units go from the oldest kept round on, one round at a time,
    down to the newest round (dropped rounds count as cleared; kept ones are never cleared
    otherwise); the states holding units in place yield where the units the window may
    hold (:attr:`Tables.kept_text`) make it so. What was dropped so stays dropped at the
    requests after."""
    lay = t.lay
    keep_rounds = min(keep_rounds, max(len(lay.round_start), 1))  # as many as there are
    eligible = _eligible(lay, n, keep_rounds)
    start = max(_droppable(t, n, keep_rounds, eligible), t.reached)
    plain, closest = _yielded(t, n, keep_rounds, start, eligible, window, False)
    units, over = _yielded(t, n, keep_rounds, plain, eligible, window, True)
    t.reached = units
    width = max(eligible, t.rounds_in[units]) + 1
    half = (units + 1) * width
    sizes = [-1] * (2 * half)  # then the same, holding units in place: with their tokens
    for b in range(units + 1):
        extra = t.holds_at(b, n)
        for c in range(t.rounds_in[b], width):
            if c > eligible and c > t.rounds_in[b]:
                break  # a kept round is dropped, never cleared
            size = lay.prefix[n] - t.cut(b, c)
            if b <= plain and (size <= window or (size == closest and closest > window)):
                sizes[b * width + c] = size
            closest_held = over > window and (b, c) == (units, width - 1)  # as the window
            if extra and (size + extra <= window or closest_held):
                sizes[half + b * width + c] = size + extra
            elif not extra and t.holds[b] and size <= window:  # words the user spoke after
                sizes[half + b * width + c] = size
    if over > window and t.kept_text[units] and not t.held[units] and t.words[units][0] < 0:
        b = units - 1  # what the window holds is the last unit: it drops one fewer
        c = max(eligible, t.rounds_in[b])
        sizes[b * width + c] = lay.prefix[n] - t.cut(b, c)
    cost = [_INF] * len(sizes)
    return Step(n, width - 1, units, sizes, cost, array("l", [-1] * len(sizes)), t)


def _yielded(
    t: Tables, n: int, keep: int, units: int, eligible: int, window: int, held: bool
) -> tuple[int, int]:
    """The most units the request of ``n`` messages may drop, from ``units``, the kept
    rounds yielding where it cannot fit the window otherwise (``held``: with the units the
    window may hold); and the closest it comes to it."""
    while True:
        closest = t.lay.prefix[n] - t.cut(units, max(eligible, t.rounds_in[units]))
        closest += t.kept_text[units] if held else 0
        if closest <= window or keep == 1:
            return units, closest
        keep -= 1
        units = max(units, _droppable(t, n, keep, len(t.lay.saves)))


def _eligible(lay: Layout, n: int, keep_rounds: int) -> int:
    """How many of the oldest rounds of the first ``n`` messages may be cleared."""
    started = sum(1 for s in lay.round_start if s < n)
    return max(0, min(_present(lay, n), started - keep_rounds))


def _present(lay: Layout, n: int) -> int:
    """The rounds of the first ``n`` messages with all their results."""
    return sum(1 for s, e in zip(lay.round_start, lay.round_end, strict=True) if e < n and s < n)


def _droppable(t: Tables, n: int, keep_rounds: int, eligible: int) -> int:
    """How many of the oldest units the request of ``n`` messages may drop, the newest
    ``keep_rounds`` rounds staying, with no more than ``eligible`` rounds inside them."""
    units = bisect_right(t.lay.unit_end, _drop_limit(t.lay, n, keep_rounds) - 1)
    while t.rounds_in[units] > eligible:
        units -= 1
    return units


def _drop_limit(lay: Layout, n: int, keep_rounds: int) -> int:
    """The first message of the first ``n`` a drop may not take: the newest
    ``keep_rounds`` rounds (or, before any round, the end)."""
    started = sum(1 for s in lay.round_start if s < n)
    if not started:
        return n
    return min(n, lay.round_start[max(started - keep_rounds, 0)])
