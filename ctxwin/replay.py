"""Replay a trace request by request: what the user pays, with and without a policy.

At every point ``t`` where the next message is the model's (and at the end of the trace),
the agent sends ``request_t``. Unmanaged, that is ``history[:t]``; managed, it is
``policy.apply(history[:t]).request``. For each, the replay adds up:

- ``input_tokens``: the tokens of every request (ctxwin's count: the text of messages and
  parts, call names and arguments, plus the format's per-message overhead), as the
  provider reads it: without the reasoning items of earlier turns where it drops them
  (OpenAI Responses);
- ``cached_tokens``: the tokens each request shares with the previous one's prefix (the
  longest common prefix of the messages the provider reads, cache markers aside, plus the
  unchanged system prompt and tools) when that prefix reaches the provider's minimum (the
  pricing's ``min_prefix``, or the model's own in ``models.yaml`` when larger, as the
  window takes it: claude-haiku-4-5 caches nothing under 4,096 tokens): what a prompt
  cache reuses. So a new message of the user's own in a Responses history breaks
  the cache at the first reasoning item of the turn before, as OpenAI bills it;
- ``effective_cost`` = cache-write price x uncached + cache-read price x cached, in plain
  input-token units, under the policy's pricing (or the one asked for);
- ``peak``: the largest request; ``problems``: pairing problems a provider would reject.

Every figure (unmanaged, managed, the optimum) is counted with the counter of the trace's
model, the body's ``model`` (:meth:`Policy.counter_for`: its ``model_counters`` entry, else
the policy's counter), as :meth:`Policy.apply` counts each request: every request is a
prefix of one body, so they all name one model. ``ReplayResult.counter`` names it.

With ``optimum=True`` the clairvoyant optimum of the policy's own family is computed too
(see :mod:`ctxwin._optimum`): the lower bound for this kind of policy. Its results are
edited as the policy edits them, summaries included (those the policy's store holds: the
summarizer is not asked again for a result the policy summarized), and its requests are the
policy's, repaired as the policy repairs them (a trace whose requests repair otherwise than
the whole trace cannot be laid out once: an :class:`~ctxwin.InputError`). The family clears
whole rounds: where the policy's window cleared part of one (``strategy: threshold``, which
stops once under ``target``), the replay's notes say that it may pay less than the optimum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ctxwin._args import checked_policy
from ctxwin._core.check import has_errors, problems_of
from ctxwin._core.conversation import Conversation, linked
from ctxwin._core.memo import Memo, PrefixCache, shared_prefix
from ctxwin._core.model import Message
from ctxwin._core.pairing import Linker
from ctxwin._core.repair import RepairTexts, repair_conversation
from ctxwin._engine import Policy
from ctxwin._exceptions import InputError, PolicyError
from ctxwin._feedback.limits import for_model, overheads_for, provider_side
from ctxwin._layout import Layout, layout
from ctxwin._optimum import optimum
from ctxwin._policy.tables import Pricing, pricing_presets, unknown_preset
from ctxwin._report.data import ReplayResult, ReplayStats, RequestFigures, ToolReplay, ToolStats
from ctxwin._report.tally import ToolTally
from ctxwin._result import Result, figures
from ctxwin._validate import checked_server_state, with_server_state
from ctxwin.formats import Adapter, detect, get_adapter
from ctxwin.formats._base import ParseState
from ctxwin.steps._clearing import plan_result
from ctxwin.steps.edit_results import EditResults
from ctxwin.tokens._meter import TokenMeter
from ctxwin.tokens._running import RunningReads

__all__ = ["ReplayResult", "ReplayStats", "ToolReplay", "replay", "request_points"]


def request_points(body: object, format: str | None = None) -> list[int]:
    """Where the agent sends a request: before each model turn, and at the end."""
    adapter = get_adapter(format or detect(body))
    conv = adapter.parse(body)
    points = [
        i
        for i, m in enumerate(conv.messages)
        if i > 0 and m.role == "assistant" and conv.messages[i - 1].role != "assistant"
    ]
    n = len(conv.messages)
    if not points or points[-1] != n:
        points.append(n)
    return points


def _prefix_body(body: object, container: str, t: int) -> object:
    if isinstance(body, Mapping):
        items = body[container]
        return {**body, container: items[:t]}
    assert isinstance(body, Sequence)
    return list(body[:t])


def _pricing(policy: Policy, body: object, pricing: str | Pricing | None) -> Pricing:
    """The prices of the replay, with the model's minimum cached prefix (:func:`for_model`:
    the provider caches nothing shorter, whatever the prices)."""
    if isinstance(pricing, Pricing):
        return for_model(pricing, _model_of(body))
    if isinstance(pricing, str):
        problem = unknown_preset(pricing)
        if problem is not None:
            raise PolicyError(problem, key="pricing")
        return for_model(pricing_presets()[pricing], _model_of(body))
    if pricing is not None:
        raise PolicyError(
            f"must be a preset name or a Pricing, not {type(pricing).__name__}", key="pricing"
        )
    return policy.pricing(_model_of(body))


def _model_of(body: object) -> str | None:
    model = body.get("model") if isinstance(body, Mapping) else None
    return model if isinstance(model, str) else None


def replay(
    body: object,
    policy: Policy | None,
    *,
    format: str | None = None,
    name: str = "trace",
    pricing: str | Pricing | None = None,
    optimum: bool = False,
    server_state: bool | None = None,
) -> ReplayResult:
    """Replay ``body`` (a request holding a whole trace) unmanaged and under ``policy``.

    ``pricing`` is a preset name or :class:`Pricing` (default: the policy's for the body's
    model); ``optimum`` also computes the clairvoyant optimum of the policy's family.
    A policy with ``pricing: auto`` (the model's preset) also decides under ``pricing``, as
    it would on a model of that provider; one with its own prices keeps deciding by them
    and is only priced by ``pricing``.

    ``server_state`` is :meth:`Policy.apply`'s, for every request, unmanaged and managed:
    ``True`` for a trace that continues a conversation on the provider's side (recorded
    without its ``previous_response_id``) keeps the results whose calls it does not hold.
    """
    if policy is not None:
        policy = checked_policy(policy, "replay")
    server_state = checked_server_state(server_state)
    fmt = format or detect(body)
    adapter = get_adapter(fmt)
    body = adapter.listed(body)
    points = request_points(body, fmt)
    policy = policy if policy is not None else Policy(format=fmt)
    price = _pricing(policy, body, pricing)
    if pricing is not None and policy.config.pricing == "auto":
        policy = _priced(policy, price)
    counter = policy.counter_for(_model_of(body))  # as apply counts each request
    meter = TokenMeter(counter, overheads_for(adapter, body, _model_of(body)))
    state = _State.of(policy, server_state, _model_of(body))
    unmanaged = _Tally(meter, adapter, price, state)
    managed = _Tally(meter, adapter, price, state)
    jumps: list[bool] = []
    tools: dict[str, list[int]] = {}
    events = 0
    window = 0
    links: PrefixCache[Linker] = PrefixCache()  # of the conversations the policy sent
    tally = ToolTally()  # their per-tool sums
    exact = True  # as every request's report says (a model read with another tokenizer: not)
    part = 0  # the first request whose window cleared part of a round (with the optimum)
    for t in points:
        request = _prefix_body(body, adapter.container, t)
        unmanaged.add(unmanaged.read(request))
        result = policy.apply(request, format=fmt, server_state=server_state)
        managed.add(result.conversation, result.request)
        got = figures(result, links, tally)
        jumps.append(got.window_events > events)
        if optimum and not part and jumps[-1] and _clears_part_of_a_round(result, events):
            part = len(jumps)
        events = got.window_events
        window = result.limits.context_window
        exact = exact and got.exact
        _sum_tools(tools, got.tools)
    notes = result.report.notes  # the last request's (its report alone is built)
    notes += (_part_of_a_round(part),) if part else ()
    laid = (body, policy, fmt, points, price, window)
    best = _optimum(*laid, state=server_state, name=name) if optimum else None
    detail = tuple(
        RequestFigures(u, m, None if best is None else best[1][i], j)
        for i, (u, m, j) in enumerate(zip(unmanaged.series, managed.series, jumps, strict=True))
    )
    return ReplayResult(
        name,
        fmt,
        managed.stats(),
        unmanaged.stats(),
        counter.name,
        exact,
        optimum=None if best is None else best[0],
        requests_detail=detail,
        context_window=window,
        tools=tuple(ToolReplay(name, *sums) for name, sums in tools.items()),
        notes=notes,
    )


def _sum_tools(sums: dict[str, list[int]], tools: Sequence[ToolStats]) -> None:
    """Add a request's per-tool figures to ``sums``: its calls, and its tokens summed."""
    for tool in tools:
        row = sums.setdefault(tool.tool, [0, 0, 0])
        row[0] = tool.calls
        row[1] += tool.tokens_before
        row[2] += tool.tokens_after


def _clears_part_of_a_round(result: Result, since: int) -> bool:
    """Whether the window's jumps from number ``since`` on, in ``result``, left a result
    uncleared that it could clear in a round they cleared results of (``strategy:
    threshold`` clears from the oldest until the request is under ``target``)."""
    ctx = result._context
    ids = {e.call_id for e in ctx.edits if e.step == "window" and (e.jump or 0) >= since}
    conv = result.conversation
    refs = [ref for ref in conv.results() if ref.round is not None]
    touched = {ref.round for ref in refs if ref.result.call_id in ids}
    return any(
        ref.round in touched and plan_result(conv, *ref.loc, ctx) is not None for ref in refs
    )


def _part_of_a_round(request: int) -> str:
    return (
        f"the window cleared part of a round (request {request} on): the optimum's family"
        " clears whole rounds, so this policy may pay less than that optimum (x optimum"
        " below 1)"
    )


def _priced(policy: Policy, price: Pricing) -> Policy:
    """``policy`` deciding under ``price``: the same policy otherwise (its counters, its
    models' counters, steps, summarizer, calibration and store: :meth:`Policy.with_overrides`)."""
    return policy.with_overrides(pricing=price.model_dump())


def _optimum(
    body: object,
    policy: Policy,
    fmt: str,
    points: list[int],
    price: Pricing,
    window: int,
    ceilings: Sequence[float] | None = None,
    *,
    deepest_drops: bool = False,
    state: bool | None = None,
    name: str = "trace",
) -> tuple[ReplayStats, list[tuple[int, int]]]:
    """The optimum of the policy's family over the whole trace, and its per-request figures
    (with ``ceilings``, the cheapest schedule whose every prefix stays within its ceiling:
    see :func:`ctxwin._optimum.optimum`, also for ``deepest_drops``; ``state``: the
    replay's ``server_state``; ``name``: the trace's, for errors).

    Raises :class:`~ctxwin.InputError` for a trace whose requests repair does not make
    the start of the whole trace repaired (see :func:`_repaired_points`)."""
    keep = policy.config.window.keep_rounds
    lay = _family_layout(body, policy, fmt, state)
    at = _repaired_points(body, policy, fmt, points, state, name, len(lay.prefix) - 1)
    schedule = optimum(lay, at, price, keep, window, ceilings, deepest_drops=deepest_drops)
    stats = ReplayStats(
        len(schedule),
        sum(r.input_tokens for r in schedule),
        sum(r.cached_tokens for r in schedule),
        max((r.input_tokens for r in schedule), default=0),
        0,
        price.cache_write,
        price.cache_read,
    )
    return stats, [(r.input_tokens, r.cached_tokens) for r in schedule]


def _family_layout(
    body: object, policy: Policy, fmt: str, server_state: bool | None = None
) -> Layout:
    """The layout of ``body`` (a listed request holding a whole trace) as the optimum of
    ``policy``'s family sees it: its results edited as the policy edits them (selected,
    summarized by its summarizer, from the summaries its store already holds, and capped),
    by a copy of it that only edits them."""
    edit_only = policy.with_overrides()  # its counters, summarizer, store and calibration
    edit_only.steps = [EditResults()]
    edited = edit_only.apply(body, format=fmt, server_state=server_state)
    return layout(edited.conversation, edit_only.context(body, fmt, server_state))


def _repaired_points(
    body: object,
    policy: Policy,
    fmt: str,
    points: list[int],
    state: bool | None,
    name: str,
    laid: int,
) -> list[int]:
    """Each request of ``points`` (message counts of the trace as given) as a count of the
    messages of the whole trace repaired, which the family's layout holds (repair drops
    orphan and duplicate results, adds a synthetic one for a missing result, moves a late
    one up). Exact: each request is repaired alone, as the policy repairs it, and must be
    the start of the whole trace repaired; where it is not (a result that comes after a
    later message: the request before it holds a synthetic one, the whole trace the result
    moved up), one layout cannot hold both, and an :class:`~ctxwin.InputError` says so.
    A trace that pairs needs none of it: a request ends before a model turn, so it holds
    all the results of its calls. ``laid``: the messages of the layout."""
    adapter = get_adapter(fmt)
    read = _State.of(policy, state, _model_of(body))
    whole = read(adapter.parse(body))
    if not has_errors(whole):
        return points
    texts = RepairTexts(**policy.config.repair.model_dump())

    def repaired(conv: Conversation) -> tuple[Message, ...]:
        if not has_errors(conv):
            return conv.messages
        return repair_conversation(conv, adapter, texts=texts)[0].messages

    fixed = repaired(whole)
    out = []
    for i, t in enumerate(points):
        got = repaired(read(adapter.parse(_prefix_body(body, adapter.container, t))))
        start = fixed[: len(got)]
        for a, b in zip(got, start, strict=False):
            if a != b or a.index != b.index:
                at = b.index if b.index is not None else a.index
                where = f"{adapter.container}[{at}]" if at is not None else None
                raise InputError(_apart(name, i, t), path=where)
        if len(start) < len(got) or len(fixed) != laid:
            raise InputError(_apart(name, i, t), path=f"{adapter.container}[{t - 1}]")
        out.append(len(got))
    return out


def _apart(name: str, i: int, t: int) -> str:
    return (
        f"the optimum of {name} cannot lay out its request {i + 1} (its first {t} messages):"
        " repaired alone, it is not the start of the whole trace repaired, which the optimum"
        " lays out (a result that comes after a later message, for one); replay it without"
        " the optimum, or repaired"
    )


@dataclass(frozen=True)
class _State:
    """How a replay reads its requests, as :meth:`Policy.apply` reads them: with the
    ``server_state`` asked for, else the policy's (``yes``/``no``), else the body's keys;
    and with what the provider adds for the trace's model (:func:`provider_side`: the
    unmanaged requests were counted without Anthropic's tool-use prompt, the managed with
    it, 2x the bill on a trace the policy did not edit)."""

    wanted: bool | None
    model: str | None = None

    @classmethod
    def of(cls, policy: Policy, given: bool | None, model: str | None = None) -> _State:
        setting = policy.config.server_state
        wanted = given if given is not None else {"yes": True, "no": False}.get(setting)
        return cls(wanted, model)

    def __call__(self, conv: Conversation) -> Conversation:
        return provider_side(with_server_state(conv, self.wanted), conv.source, self.model)


@dataclass
class _Tally:
    """The figures of one side of a replay, request by request. Its parse memos make each
    request parse only what the one before did not hold (the new messages, and the edited
    ones the policy made anew), and its running reads measure only those: the whole history
    parsed, or read, at every request made a replay quadratic in its trace."""

    meter: TokenMeter
    adapter: Adapter
    price: Pricing
    state: _State
    memo: Memo = field(default_factory=Memo)
    prefix: PrefixCache[ParseState] = field(default_factory=PrefixCache)
    links: PrefixCache[Linker] = field(default_factory=PrefixCache)
    reads: RunningReads = field(init=False)
    prev_items: list[object] = field(default_factory=list)
    prev_env: object = None
    series: list[tuple[int, int]] = field(default_factory=list)
    requests: int = 0
    input: int = 0
    cached: int = 0
    peak: int = 0
    problems: int = 0

    def __post_init__(self) -> None:
        self.reads = RunningReads(self.meter)

    def add(self, conv: Conversation, rendered: object | None = None) -> None:
        adapter = self.adapter
        body = rendered if rendered is not None else conv.source
        # what the provider reads: without what it drops (earlier turns' reasoning)
        reads = self.reads
        reads.read(conv.messages)
        items = _kept(adapter.items_of(body), reads.unread)
        env = self.meter.envelope(conv)
        total = env + reads.total()
        env_key = _envelope_key(body, adapter.container)
        cached = 0
        if self.requests and env_key == self.prev_env:
            prev = self.prev_items
            j = shared_prefix(items, prev)  # then compared from the first that differs
            for a, b in zip(items[j:], prev[j:], strict=False):
                if a is not b and a != b and adapter.unmarked(a) != adapter.unmarked(b):
                    break
                j += 1
            cached = env + reads.kept(j)
        if cached < self.price.min_prefix:
            cached = 0
        self.requests += 1
        self.input += total
        self.cached += cached
        self.peak = max(self.peak, total)
        self.series.append((total, cached))
        # Checked on the body as sent, parsed afresh: what the provider would see.
        self.problems += self.rejected(self.read(body) if rendered is not None else conv)
        self.prev_items = items
        self.prev_env = env_key

    def read(self, body: object) -> Conversation:
        """``body`` parsed as the provider reads it, from what earlier requests parsed."""
        return self.state(self.adapter.parse(body, self.memo, self.prefix))

    def rejected(self, conv: Conversation) -> int:
        """The problems of ``conv`` a provider would reject. Paired from where the request
        before it left off, as the engine pairs (:func:`linked`), and listed only when
        :func:`has_errors` (which sees every kind :func:`problems_of` lists, and looks at
        the rounds that may have changed only) finds one."""
        key = (conv.server_state, conv.rules.unique_ids)
        if not has_errors(conv, linked(conv, self.links, key).verdicts):
            return 0
        return len(problems_of(conv, self.adapter))

    def stats(self) -> ReplayStats:
        return ReplayStats(
            self.requests,
            self.input,
            self.cached,
            self.peak,
            self.problems,
            self.price.cache_write,
            self.price.cache_read,
        )


def _kept(items: Sequence[object], unread: Sequence[int]) -> list[object]:
    """``items`` without those at the ``unread`` positions (in order)."""
    out: list[object] = []
    start = 0
    for k in unread:
        out.extend(items[start:k])
        start = k + 1
    out.extend(items[start:])
    return out


def _envelope_key(body: object, container: str) -> object:
    if isinstance(body, Mapping):
        return {k: v for k, v in body.items() if k != container}
    return None
