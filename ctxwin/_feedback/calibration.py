"""Calibration: what ctxwin's counts are worth in the provider's tokens, per model.

ctxwin counts offline with tiktoken encodings: exact for OpenAI models, estimates for Claude
and Gemini (published comparisons put Claude's tokenizer 16-35% above GPT-4o's). Each
observed request compares the provider's reported input tokens with ctxwin's own count of
the same request (system and tools included). The ratio the window uses is the largest of
the last observations plus a safety margin, rounded up to a step of 5%.

An observation whose ratio is beyond :data:`MAX_RATIO` (or under :data:`MIN_RATIO`) is not
learned from: no tokenizer differs that much, so the usage is not this request's (another
request's, a run's total, or a request whose context lives on the provider's side:
``previous_response_id``, ``conversation``, a Gemini ``cachedContent``). Learned, such a ratio
would shrink (or grow) the window it budgets many times over; it is reported instead with a
:class:`CalibrationWarning`, and counted in :attr:`ModelCalibration.refused`.

Calibration never churns the cache: in each conversation the policy serves, a new ratio
applies from the messages it brings after the ratio was learned, so everything decided
before stays decided, and the same again when the conversation is folded afresh (its fold
no longer in the policy's memos, or a proxy's requests, new objects every time):
:class:`ConversationRatios` keeps, per conversation, where each ratio took over. A request
continues a conversation when it holds, where they stood, the messages that conversation's
latest request held at a few positions (its last among them); any other request (a new
conversation, one that starts as another did, one rewound or compacted) takes the ratio in
force throughout. The ratio moves with hysteresis: up as soon as an observation needs it,
down only when every recent observation is well below it.

Ratios were once placed by message position for the whole policy, from the longest history
it had seen: a policy serving several conversations then kept a shorter one on the old ratio
until it grew past the longest, and its requests went over the provider's window.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import warnings
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from ctxwin._core.conversation import Conversation
from ctxwin._core.memo import Memo
from ctxwin._core.model import Message, Opaque, ToolResult
from ctxwin._exceptions import CalibrationWarning, user_stacklevel
from ctxwin.formats import adapter_of
from ctxwin.formats._markers import ANTHROPIC, OPENAI

__all__ = [
    "MAX_RATIO",
    "MIN_RATIO",
    "Calibration",
    "ConversationRatios",
    "ModelCalibration",
]

STEP = 0.05
MARGIN = 0.02
RECENT = 8
EXACT = 0.005
"""Ratios within this of 1 are ctxwin counting as the provider does."""
MAX_RATIO = 5.0
"""The largest ratio learned from: tokenizer gaps are fractions (Claude's runs 16-35% above
o200k's); the largest gap of ctxwin's own estimates is an image's (1,000 tokens counted, up to
some 4,800 billed by Claude's newest models), so a request of nothing but images stays under."""
MIN_RATIO = 0.25
"""The smallest ratio learned from (an image ctxwin counts at 1,000 tokens, a URL's or
another format's, may be billed at 85, OpenAI's ``detail: low``: a twelfth, but text
dilutes it; an inline OpenAI Responses image is counted by its size; a provider counting a
quarter of ctxwin's count is reporting part of the input: the uncached part, say)."""


_ELSEWHERE = (
    "The request's context lives on the provider's side (previous_response_id, conversation, "
    "a Gemini cachedContent, or server_state=True), which it bills and ctxwin does not see."
)
_SUMMED = (
    "The usage sums the sampling passes of a server-side tool loop (server_tool_use counts a "
    "request), each reading the request and what the tools added, and does not list them "
    "(usage.iterations): the request's own input is not known."
)
_FAR = (
    "No tokenizer is that far off: is it the usage of another request, a run's total, or of "
    "a request whose context lives on the provider's side? Or a request so small that the "
    "provider's fixed overhead (Anthropic's tool-use system prompt: some 350 tokens) "
    "outweighs it?"
)


@dataclass
class ModelCalibration:
    """One model's observations and the ratios it has used, by message position."""

    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    schedule: list[tuple[int, float]] = field(default_factory=lambda: [(0, 1.0)])
    """The ratios in force, in the order they were learned, each with the message count
    of the request it was learned after (the first: 1.0 from the start)."""
    last: tuple[int, int] | None = None
    """The latest (predicted, reported) input tokens."""
    refused: int = 0
    """Observations not learned from: their ratio was past :data:`MAX_RATIO` or
    :data:`MIN_RATIO`, or the request's context lived on the provider's side."""
    warned: set[str] = field(default_factory=set)
    """Why observations were refused, each said once (a warning)."""

    @property
    def ratio(self) -> float:
        """The ratio the window uses now (with the safety margin)."""
        return self.schedule[-1][1]

    @property
    def estimate(self) -> float:
        """The best guess of the provider's count per ctxwin token (no margin): the median of
        the recent observations."""
        if not self.recent:
            return 1.0
        ordered = sorted(self.recent)
        return ordered[len(ordered) // 2]

    def error(self) -> float | None:
        """How far the latest prediction was off: (reported - predicted) / reported."""
        if self.last is None or not self.last[1]:
            return None
        predicted, reported = self.last
        return (reported - predicted) / reported


class Calibration:
    """Ratios per model (see the module). ``None`` is the model of requests without one."""

    def __init__(self) -> None:
        self._models: dict[str | None, ModelCalibration] = {}

    def of(self, model: str | None) -> ModelCalibration:
        found = self._models.get(model)
        if found is None:
            found = self._models[model] = ModelCalibration()
        return found

    def schedule(self, model: str | None) -> list[tuple[int, float]]:
        found = self._models.get(model)
        return found.schedule if found is not None else [(0, 1.0)]

    def ratio(self, model: str | None) -> float:
        """The ratio in force for ``model`` (1.0 before any observation)."""
        found = self._models.get(model)
        return found.ratio if found is not None else 1.0

    def observe(
        self,
        model: str | None,
        predicted: int,
        reported: int,
        at: int,
        elsewhere: bool = False,
        summed: bool = False,
    ) -> float:
        """Note one request (``at``: its message count, noted with a new ratio); returns
        the ratio now in force.
        ``elsewhere``: the request's context lives on the provider's side, which bills
        tokens ctxwin never saw: not learned from; nor ``summed``, the passes of a
        server-side tool loop added up, unlisted (``reported`` is 0 then)."""
        cal = self.of(model)
        if summed:
            return self._refuse(cal, model, None, _SUMMED)
        cal.last = (predicted, reported)
        if predicted <= 0 or reported <= 0:
            return cal.ratio
        observed = reported / predicted
        if elsewhere:
            return self._refuse(cal, model, observed, _ELSEWHERE)
        if not MIN_RATIO <= observed <= MAX_RATIO:
            return self._refuse(cal, model, observed, _FAR)
        return self._learn(cal, observed, at)

    def _refuse(
        self, cal: ModelCalibration, model: str | None, observed: float | None, why: str
    ) -> float:
        """Count a usage not learned from, and say why the first time for the model."""
        cal.refused += 1
        if why not in cal.warned:
            cal.warned.add(why)
            said = (
                ""
                if observed is None
                else f"the provider reported {observed:.3g}x the tokens ctxwin counts: "
            )
            warnings.warn(
                f"model {model!r}: {said}not learned from. {why} (Said once per model; "
                "policy.calibration.of(model).refused counts every such usage.)",
                CalibrationWarning,
                stacklevel=user_stacklevel(),
            )
        return cal.ratio

    def _learn(self, cal: ModelCalibration, observed: float, at: int) -> float:
        cal.recent.append(observed)
        worst = max(cal.recent)
        if worst <= 1 + EXACT:
            wanted = 1.0  # ctxwin counts as the provider does: no margin needed
        else:
            wanted = round(math.ceil(worst * (1 + MARGIN) / STEP - 1e-9) * STEP, 4)
        current = cal.ratio
        lowered = len(cal.recent) == RECENT and wanted <= current - 2 * STEP
        if wanted > current or lowered:
            if cal.schedule[-1][0] == at:
                cal.schedule[-1] = (cal.schedule[-1][0], wanted)
            else:
                cal.schedule.append((at, wanted))
        return cal.ratio


CONVERSATIONS = 50_000
"""Conversations whose ratio switches :class:`ConversationRatios` keeps, in groups by how
they start (:data:`PER_START` a group at most), the least recently applied group going
first: one forgotten is folded again with the ratio in force throughout."""
PER_START = 64
DIGEST_MESSAGES = 2
DIGEST_CHARS = 4_000
"""What tells where a conversation starts, and a message: its system prompt and first
messages, so many characters of each end of each text (and its length); an image or another
block without text by its wire data, so (screenshots alike in their first kilobytes)."""
MARKS = 8
"""Messages a conversation's record holds the digest of, spread over what it has applied (its
last among them): a request continues it only when it holds them all where they stood (a
``continue`` of the user's at the same place in a conversation starting alike is not
enough)."""
_FIELDS = ("id", "call_id", "name", "kind", "text", "arguments")


def _text(value: str) -> bytes:
    ends = value if len(value) <= 2 * DIGEST_CHARS else value[:DIGEST_CHARS] + value[-DIGEST_CHARS:]
    return b"\x01" + str(len(value)).encode() + b"\x01" + ends.encode("utf-8", "surrogatepass")


def _marked_at(n: int) -> list[int]:
    """The positions of the messages a record of ``n`` applied messages holds the digest of
    (:data:`MARKS`): the last first, the others spread over the rest, each on a multiple of
    the largest power of two at most ``n / MARKS``, so that they stay where they were as a
    history grows by a round (their digests are memo hits: only the last is new)."""
    step = 1 << max(0, (n // MARKS).bit_length() - 1)
    spread = (n * j // MARKS // step * step for j in range(MARKS - 1, 0, -1))
    return list(dict.fromkeys([n - 1, *spread]))


def _unmarked(raw: object) -> object:
    """A wire block without its cache breakpoint (a client moves it to the newest block,
    an image as often as not, every request: the same block all the same)."""
    return OPENAI.cleared(ANTHROPIC.cleared(raw))


def _envelope_text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:  # Anthropic's system as text blocks, Gemini's systemInstruction...
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(type(value))


@dataclass
class _Switches:
    """One conversation's ratios by message position, how far it has been applied, and the
    digests of its messages at a few positions up to there (:data:`MARKS`: a request
    continues it when it holds those messages there)."""

    points: list[tuple[int, float]]
    reached: int
    marks: list[tuple[int, bytes]]


class ConversationRatios:
    """Where each ratio took over, per conversation (see the module): a request that
    continues a conversation (it holds the messages the conversation's latest request held
    at :data:`MARKS` positions, where they stood) folds the messages up to there with the
    ratios it had then, and the new ones with the ratio in force; any other (a new
    conversation, one that starts as another does, one rewound or compacted) takes the
    ratio in force throughout. Its digests of messages are memoized by identity (a
    history's messages come back as the same objects from the policy's parse memo), held by
    the policy like its other memos."""

    def __init__(self, size: int = CONVERSATIONS) -> None:
        self._known: OrderedDict[tuple[str | None, bytes], list[_Switches]] = OrderedDict()
        self._size = size
        self._count = 0
        self._digests = Memo()
        self._lock = threading.Lock()  # shared by a policy's with_overrides copies

    def fingerprint(self, conv: Conversation) -> bytes:
        """A digest of where a conversation starts (its format, its system prompt when the
        format keeps it apart, its first :data:`DIGEST_MESSAGES` messages), the same for
        every request of it however its messages are built (a proxy's are new objects)."""
        h = hashlib.blake2b(conv.format.encode(), digest_size=16)
        for value in adapter_of(conv).system(conv.source):  # not the tools: they may change
            h.update(b"\x02" + _text(_envelope_text(value)))
        for msg in conv.messages[:DIGEST_MESSAGES]:
            h.update(self.digest(msg))
        return h.digest()

    def digest(self, message: Message) -> bytes:
        """A digest of one message (role, ids, names, texts): whether a request holds, at
        a position, the message a conversation had there."""
        found = self._digests.get(message)
        if isinstance(found, bytes):
            return found
        h = hashlib.blake2b(message.role.encode(), digest_size=16)
        for block in message.blocks:
            for name in _FIELDS:
                value = getattr(block, name, None)
                if isinstance(value, str):
                    h.update(_text(value))
            parts = block.content if isinstance(block, ToolResult) else (block,)
            for part in parts:
                if isinstance(part, Opaque):  # an image by its data, not its kind alone
                    h.update(b"\x03" + _text(_envelope_text(_unmarked(part.raw))))
        digest = h.digest()
        self._digests.put(message, digest)
        return digest

    def points(
        self, model: str | None, conv: Conversation, ratio: float
    ) -> list[tuple[int, float]]:
        """The ratios by position for a request of ``conv`` on ``model``, ``ratio`` in force
        now; only those of positions the request holds."""
        messages = conv.messages
        n = len(messages)
        with self._lock:
            key = (model, self.fingerprint(conv))
            group = self._known.get(key)
            if group is None:
                group = self._known[key] = []
            self._known.move_to_end(key)
            found = next((g for g in reversed(group) if self._holds(messages, g)), None)
            marks = [(k, self.digest(messages[k])) for k in _marked_at(n)] if n else []
            if found is None:  # not one it holds the messages of: the ratio in force throughout
                self._add(group, _Switches([(0, ratio)], n, marks))
                return [(0, ratio)]
            if found.points[-1][1] != ratio:  # learned since: from what comes next
                at = found.reached
                if found.points[-1][0] == at:
                    found.points[-1] = (at, ratio)
                else:
                    found.points.append((at, ratio))
            found.reached, found.marks = n, marks
            group.remove(found)
            group.append(found)  # the most recently applied last
            return [p for p in found.points if p[0] < n] or found.points[:1]

    def _holds(self, messages: tuple[Message, ...], switches: _Switches) -> bool:
        """Whether a request of ``messages`` continues the conversation of ``switches``."""
        return 0 < switches.reached <= len(messages) and all(
            self.digest(messages[k]) == d for k, d in switches.marks
        )

    def clear_memo(self) -> None:
        """Forget the digests of messages (:meth:`Policy.clear_memo`); the switches stay."""
        with self._lock:
            self._digests = Memo()

    def _add(self, group: list[_Switches], switches: _Switches) -> None:
        group.append(switches)
        self._count += 1
        if len(group) > PER_START:
            del group[0]
            self._count -= 1
        while self._count > self._size and len(self._known) > 1:
            _, oldest = self._known.popitem(last=False)
            self._count -= len(oldest)
