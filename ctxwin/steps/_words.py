"""The user's latest words through a drop (:mod:`~._drops`).

Anthropic asks for the user's next words sent with tool results in the results' message,
after the ``tool_result`` blocks (Claude Code sends a user's interjection so); Gemini
likewise has a text part after the ``functionResponse`` parts. Such a message belongs to
the round it answers, and a drop takes rounds whole. When the round goes while that message
holds the user's latest words (:attr:`~._foldstate.FoldState.last_words`), the words stay
where they were, as a user message of their own: the results go with their calls, and the
request holds what OpenAI Chat holds for the same conversation, where the words are a
message of their own. Two user messages in a row are one turn to both providers.

The words are what ``messages[: k + 1]`` says, so a fold resumed from a shorter request
splits the same message the same way. Left as a message of their own, the words are the
latest user message, as a fold of the output reads them (:func:`speak_alone`): the user
message before them, and the round whose thinking opened its turn, are kept no more, and
the first assistant message after the words opens the turn now (review s50-9 finding 2:
kept as the input had them, they held a request over the window that the output, applied
again, brought within it). So the output is its own fixed point. Once the user speaks
again, the message is a plain one that a later drop may take whole (:func:`~._drops.unit`
sees no result left in it).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._core.conversation import Conversation
from ctxwin._core.model import Block, Message, Opaque, Text, opens_turn
from ctxwin.steps._base import Context
from ctxwin.steps._foldstate import FoldState

__all__ = ["keep_words", "own_blocks", "speak_alone", "words_note"]


def _own(block: Block) -> bool:
    """A block of the user's own: text, or what the user sent with it (an image, a document:
    an opaque part tied to no call the server runs)."""
    return isinstance(block, Text) or (
        isinstance(block, Opaque) and block.tie is None and not block.opens
    )


def own_blocks(msg: Message) -> tuple[Block, ...]:
    """The blocks of ``msg`` a drop of its round keeps while they hold the user's latest
    words (:func:`keep_words`)."""
    return tuple(b for b in msg.blocks if _own(b))


def keep_words(
    st: FoldState, conv: Conversation, group: Sequence[int], words: int, ctx: Context
) -> tuple[list[int], int]:
    """The messages of ``group``, which a drop takes, that go whole, and what it takes off
    message ``words`` (-1: none in it), left with the user's own blocks (text, and what the
    user sent with it: an image, a document), in tokens. The blocks cut
    (:attr:`~._foldstate.FoldState.cut`) leave the plans of clearings and are never
    cleared."""
    if words < 0:
        return list(group), 0
    for loc in [loc for loc in st.plans if loc[0] == words]:
        st.savings -= st.plans.pop(loc).saves
        st.since.pop(loc, None)
    msg = conv.messages[words]
    gone = st.cut.get(words, frozenset())
    cut = frozenset(bi for bi, b in enumerate(msg.blocks) if bi in gone or not _own(b))
    out = msg.with_blocks(tuple(b for bi, b in enumerate(msg.blocks) if bi not in cut))
    before = st.cur[words]
    after = ctx.message_tokens(out)
    st.cut[words] = cut
    st.out[words] = out
    st.cur[words] = after
    st.lower_reads(words, before - after)
    return [j for j in group if j != words], before - after


def speak_alone(st: FoldState, conv: Conversation, words: int, k: int) -> None:
    """The words of message ``words``, left by a drop as a message of their own (folded up
    to message ``k``), are the latest user message from now on, as :func:`~._fold._enter`
    reads one: the turn opens with the first assistant message after them (-2: none yet;
    -1: it begins with nothing the provider requires first)."""
    st.last_user_text = words
    st.turn_open = -2 if conv.rules.turn_openers else -1
    if st.turn_open == -1:
        return
    for j in range(words + 1, k + 1):
        msg = conv.messages[j]
        if msg.role == "assistant" and j not in st.dropped_set:
            st.turn_open = j if opens_turn(msg, conv.rules) else -1
            return


def words_note(words: int) -> str:
    """What a drop's note adds when it kept the user's words of message ``words``."""
    if words < 0:
        return ""
    return f" and the results of message {words} (the user's words after them stay)"
