"""What the meter reads of the requests of one history, sent one after another, kept from
each request to the next (a replay's)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from ctxwin._core.memo import shared_prefix
from ctxwin._core.model import Message, is_reasoning_item, is_user_text
from ctxwin.tokens._meter import TokenMeter

__all__ = ["RunningReads"]


class RunningReads:
    """:meth:`TokenMeter.read` and :meth:`TokenMeter.kept` of each request of a history,
    as running sums: a request measures only the messages after the run it shares with the
    one before (the same objects), where reading every message of every request made a
    replay quadratic in its trace.

    What the provider drops (:meth:`TokenMeter.unread`, where the format says so: the
    reasoning items before the latest message of the user's own,
    :func:`~ctxwin._core.model.earlier_reasoning`) is found from the positions of those
    messages, kept too.
    """

    def __init__(self, meter: TokenMeter) -> None:
        self.meter = meter
        self.drops = meter.overheads.drops_earlier_reasoning
        self.messages: Sequence[Message] = ()
        self.sums = [0]  # the tokens of the first i messages
        self.users: list[int] = []  # positions of the user's own messages
        self.reasoning: list[int] = []  # positions of reasoning items
        self.reasoning_sums = [0]  # the tokens of the first j of them
        self.unread: list[int] = []
        """The positions the provider drops from the request read last, in order."""

    def read(self, messages: Sequence[Message]) -> None:
        """Read the request holding ``messages``, from what the one before held."""
        k = shared_prefix(self.messages, messages)
        sums, users, reasoning, reasoning_sums = (
            self.sums,
            self.users,
            self.reasoning,
            self.reasoning_sums,
        )
        del sums[k + 1 :]
        del users[bisect_left(users, k) :]
        cut = bisect_left(reasoning, k)
        del reasoning[cut:]
        del reasoning_sums[cut + 1 :]
        message, drops = self.meter.message, self.drops
        total = sums[-1]
        for i in range(k, len(messages)):
            msg = messages[i]
            tokens = message(msg)
            total += tokens
            sums.append(total)
            if drops and is_user_text(msg):
                users.append(i)
            elif drops and is_reasoning_item(msg):
                reasoning.append(i)
                reasoning_sums.append(reasoning_sums[-1] + tokens)
        self.messages = messages
        latest = users[-1] if users else -1
        self.unread = reasoning[: bisect_left(reasoning, latest)]

    def total(self) -> int:
        """The tokens of the messages the provider reads (``sum(meter.read(messages))``)."""
        return self.sums[-1] - self.reasoning_sums[len(self.unread)]

    def kept(self, j: int) -> int:
        """The tokens of the first ``j`` messages the provider reads."""
        end = j  # the position after the j-th message read
        dropped = 0
        for k in self.unread:
            if k > end:
                break
            end += 1
            dropped += 1
        return self.sums[end] - self.reasoning_sums[dropped]
