"""What the engine's entry points check and say around a request: the arguments of
``apply`` and ``aapply`` (``model=``, ``errors=``, ``server_state=``), summarize rules
loaded without a summarizer, usage that calibration must not learn from, and the counter
each model's requests are counted with.

Each check costs an ``is`` or an ``isinstance`` for the usual arguments (``None``, a name),
so the hot path does not notice it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import NOT_JSON, parse_json
from ctxwin._exceptions import InputError, PolicyWarning
from ctxwin._feedback.limits import profile_of
from ctxwin._policy.compile import CompiledPolicy
from ctxwin.steps._answer import GREP_NOT_TEXT
from ctxwin.steps._shelf import RecallAnswer
from ctxwin.tokens.counters import MemoCounter, TiktokenCounter

__all__ = [
    "EstimatedCounter",
    "ModelCounters",
    "checked_errors",
    "checked_model",
    "context_elsewhere",
    "recall_arguments",
    "unsummarized",
    "unsummarized_note",
]

NO_ERRORS: frozenset[str] = frozenset()
_MODELS = 1024
"""Model names whose counter :class:`ModelCounters` remembers (names come from requests)."""


def checked_model(model: object) -> str | None:
    """``model`` when it is a model's name (a non-empty str) or None; otherwise an
    :class:`~ctxwin.InputError` at ``model`` (``model=123`` raised a bare AttributeError
    deep in the profile lookup)."""
    if model is None or (isinstance(model, str) and model):
        return model
    shown = "an empty string" if isinstance(model, str) else type(model).__name__
    raise InputError(
        f"model= takes the model's name (a non-empty str) or None, not {shown}", path="model"
    )


def checked_errors(errors: object) -> frozenset[str]:
    """The call ids of ``errors=`` (a collection of str; None or empty: none), or an
    :class:`~ctxwin.InputError` at ``errors``: one string would be read as its characters."""
    if errors is None or (isinstance(errors, tuple | frozenset) and not errors):
        return NO_ERRORS  # the default: nothing to look at
    if isinstance(errors, str | bytes):
        raise InputError(
            "errors= takes a collection of call ids (errors=['call_1']), not one string",
            path="errors",
        )
    if not isinstance(errors, Iterable):
        raise InputError(
            f"errors= takes a collection of call ids (str), not {type(errors).__name__}",
            path="errors",
        )
    ids = list(errors)
    wrong = next((i for i in ids if not isinstance(i, str)), None)
    if wrong is not None:
        raise InputError(f"errors= takes call ids (str), not {type(wrong).__name__}", path="errors")
    return frozenset(ids)


def recall_arguments(arguments: object) -> tuple[str, object, str | None] | RecallAnswer:
    """A recall call's arguments (a dict, or the JSON text of one) as ``(handle, lines,
    grep)``, or the error answer the agent gets for them."""
    args = arguments
    if isinstance(args, str):
        args = parse_json(args)  # nested past Python's stack too: not a RecursionError
        if args is NOT_JSON:
            return RecallAnswer(f"recall: arguments are not JSON: {arguments!r:.60}", True)
    if not isinstance(args, Mapping) or not isinstance(args.get("handle"), str):
        return RecallAnswer('recall: pass {"handle": "r-..."} (and lines or grep)', True)
    grep = args.get("grep")
    if grep is not None and not isinstance(grep, str):
        return GREP_NOT_TEXT
    return args["handle"], args.get("lines"), grep


# ---------------------------------------------------------------------------- summaries


def _summarized(compiled: CompiledPolicy) -> list[str]:
    """The patterns of the tool rules that ask for summaries, sorted."""
    return sorted(t.pattern for t in compiled.tools if t.rules.summarize is not None)


def unsummarized(compiled: CompiledPolicy) -> PolicyWarning | None:
    """The warning for a policy whose tools ask for summaries when no summarizer is given
    (their results over ``over_tokens`` are capped instead, as when the summarizer fails,
    with a note in each report), or None."""
    asked = [t for t in compiled.tools if t.rules.summarize is not None]
    if not asked:
        return None
    where = {t.source.partition(": ")[::2] for t in asked}  # (file, "tools.<pattern>" or "")
    file, entry = where.pop() if len(where) == 1 else (None, "")
    names = ", ".join(_summarized(compiled))
    return PolicyWarning(
        f"the summarize rules of {names} will not run: no summarizer was passed "
        "(load_policy(..., summarizer=...)); their results over over_tokens are capped "
        "instead, at the tool's max_tokens, else summarize.max_tokens",
        file=None if file == "<policy>" else file,
        key=f"{entry}.summarize" if entry else "summarize",
    )


def unsummarized_note(compiled: CompiledPolicy) -> str | None:
    """The report's note for summarize rules that did not run (no summarizer), or None."""
    asked = _summarized(compiled)
    if not asked:
        return None
    return (
        f"summarize rules for {', '.join(asked)} were not applied: no summarizer was "
        "passed to the policy (results over over_tokens are capped at the tool's "
        "max_tokens, else summarize.max_tokens: fallback summarizer_missing)"
    )


# ---------------------------------------------------------------------------- usage


def context_elsewhere(conv: Conversation) -> bool:
    """Whether the provider bills context the request does not carry: earlier turns on its
    side (``previous_response_id``, ``conversation``, an item reference, a Gemini
    ``cachedContent``, or said so by ``server_state``). Calibration does not learn from
    such a request's usage: early in a chain it is some 3x ctxwin's count, inside the
    ratios it otherwise learns from."""
    return conv.server_state or conv.body_server_state


# ---------------------------------------------------------------------------- counters


class EstimatedCounter(MemoCounter):
    """The policy's counter for a model whose profile names another tokenizer (``gpt-4``
    reads ``cl100k_base``; the policy counts with ``o200k_base``): the very same counts
    and memo, but not claimed exact (the report's ``exact``)."""

    def __init__(self, of: MemoCounter) -> None:
        super().__init__(of.inner, sharing=of)  # the same text counts once, as the policy's does
        self.exact = False


class ModelCounters:
    """The counter of each model: its own (``model_counters``, the longest name prefix
    first), else the policy's; an :class:`EstimatedCounter` of it where the model's profile
    names a tokenizer other than the one it counts with. Remembered per model name."""

    def __init__(self, base: MemoCounter, own: Mapping[str, MemoCounter]) -> None:
        self.base = base
        self.own = dict(sorted(own.items(), key=lambda kv: -len(kv[0])))
        self._estimate: EstimatedCounter | None = None
        self._found: dict[str, MemoCounter] = {}

    def clear(self) -> None:
        """Forget what every counter counted (:meth:`Policy.clear_memo`)."""
        for counter in (self.base, *self.own.values()):
            counter.clear()

    def __call__(self, model: str | None) -> MemoCounter:
        if not model:
            return self.base
        hit = self._found.get(model)
        if hit is None:
            hit = self._find(model)
            if len(self._found) < _MODELS:
                self._found[model] = hit
        return hit

    def _find(self, model: str) -> MemoCounter:
        for prefix, counter in self.own.items():
            if model.startswith(prefix):
                return counter
        base = self.base
        if self.reads(model) is None:
            return base
        if self._estimate is None:
            self._estimate = EstimatedCounter(base)
        return self._estimate

    def estimate_notes(self, model: str | None) -> list[str]:
        """The report's note for a model counted with another tokenizer than its own (none
        for the others)."""
        if not model or not isinstance(self(model), EstimatedCounter):
            return []
        reads = self.reads(model)
        return [
            f"{model} reads {reads}, the policy counts with {self.base.name}: counts are "
            f"estimates (tokenizer: {reads} counts them exactly)"
        ]

    def reads(self, model: str | None) -> str | None:
        """The tokenizer ``model`` reads, when the policy's exact tiktoken counter counts
        with another (None otherwise)."""
        base = self.base
        if not (base.exact and isinstance(base.inner, TiktokenCounter)):
            return None
        found = profile_of(model)
        if found is None or found[1].tokenizer == base.name:
            return None
        return found[1].tokenizer
