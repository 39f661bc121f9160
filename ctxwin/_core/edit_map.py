"""The edit map: for each message of a request as sent, where it came from and what changed.

Integrations use it to map ctxwin's output back onto their own message objects (an unchanged
message goes out as the very object the framework holds; an edited one as a copy with only
the edited content replaced), and so can anyone who keeps a history of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ctxwin._core.conversation import Conversation

__all__ = ["Change", "EditMap", "MessageChange", "edit_map"]

Change: TypeAlias = Literal["kept", "edited", "added"]


@dataclass(frozen=True, slots=True)
class MessageChange:
    """One message of the output and its source.

    ``index`` is its position in the output list, ``source`` the position of the input
    message it came from (``None`` when ctxwin made it: a synthetic result, a first user
    message). ``change`` is ``kept`` (the input message as it was), ``edited`` (some of its
    blocks changed: their positions, in this message, are ``blocks``) or ``added``.
    """

    index: int
    source: int | None
    change: Change
    blocks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EditMap:
    """How a request as sent relates to the request as given (see :class:`MessageChange`).

    ``dropped`` lists the input positions that have no output message.
    """

    messages: tuple[MessageChange, ...]
    dropped: tuple[int, ...]

    def changed(self) -> tuple[MessageChange, ...]:
        """The output messages that are not exactly their input message."""
        return tuple(m for m in self.messages if m.change != "kept")


def edit_map(before: Conversation, after: Conversation) -> EditMap:
    """The edit map from ``before`` (as parsed) to ``after`` (as sent)."""
    inputs = before.messages
    out: list[MessageChange] = []
    seen: set[int] = set()
    for i, msg in enumerate(after.messages):
        src = msg.index
        if src is None or not 0 <= src < len(inputs):
            out.append(MessageChange(i, None, "added"))
            continue
        seen.add(src)
        original = inputs[src]
        if msg is original or msg.pristine:
            out.append(MessageChange(i, src, "kept"))
            continue
        if len(msg.blocks) == len(original.blocks):
            blocks = tuple(
                k
                for k, (a, b) in enumerate(zip(msg.blocks, original.blocks, strict=True))
                if a is not b
            )
        else:
            blocks = tuple(range(len(msg.blocks)))
        out.append(MessageChange(i, src, "edited", blocks))
    dropped = tuple(k for k in range(len(inputs)) if k not in seen)
    return EditMap(tuple(out), dropped)
