"""Replay real agent traces request by request: what the user pays (issue 3, section 7).

    python benchmarks/replay.py [--corpora ../shared/corpora] [--policy PATH|default]
                                [--context-window N] [--mask-keep 5] [--only GLOB] [--json]

Every trace of the corpora folder (one request body per file, in its provider's format) is
replayed with :func:`ctxwin.replay.replay`: at each point where the next message is the
model's, the agent sends ``history[:t]`` (unmanaged) or ``policy.apply(history[:t])``
(managed). Per trace it prints the requests, the input tokens of all requests, the tokens
a prompt cache would reuse (longest common prefix with the previous request), the
effective cost (1.25 x uncached + 0.1 x cached, in input-token units), the largest request
(peak) and pairing problems a provider would reject, managed against unmanaged.

The policy that fits each trace: ``policies/airline`` for ``tau-airline-*``,
``policies/coding`` for Codex (``codex-*``), SWE-agent (``sweagent-*``) and Claude Code
(``ccv-*``) sessions, ctxwin's default policy for the rest; ``--policy`` forces one.
``--context-window N`` replaces the policy's context window (its trigger and target, when
they are fractions, scale with it), e.g. to see the window act on the shorter traces.

Traces are grouped by their unmanaged peak against the policy: ``window`` (outgrows the
context window), ``trigger`` (passes the window's trigger but fits the window), ``below``
(never reaches the trigger). Targets: ``window`` traces peak <= 0.5x and cost <= 0.85x
(issue 3); every trace that fits the window (``trigger`` and ``below``) at most 1.10x, and
each of those two groups at most 1.00x in total (issue 10: ``strategy: cost`` clears for
money below the trigger, so issue 3's "exactly 1.00x below the trigger" no longer holds by
design). ``win-only`` replays the same policy with the window and budget steps only (no
select/cap/summarize): what the window alone does.

Reference strategies, for comparison on the same traces (never part of ctxwin):

- ``mask``: plain observation masking: keep the newest ``--mask-keep`` tool results and
  replace every older one with a short placeholder, recomputed for each request from the
  request alone (no trigger, no state);
- ``LC``: LangChain's ``ClearToolUsesEdit`` (langchain v1 context-editing middleware)
  applied to each request, with its default approximate counter and ``keep=3``, its
  trigger at the policy's trigger (in tokens); ``LC`` with ``clear_at_least=0`` (its
  default: clear all but the newest 3 results once over the trigger) and ``LC cal`` with
  ``clear_at_least`` = trigger - target. Needs langchain importable (see README); skipped
  with a note otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _histories import REPO

import ctxwin
from ctxwin import Context, Conversation, PolicyConfig, ToolCall, ToolResult
from ctxwin.replay import ReplayResult, ReplayStats, replay

CORPORA = REPO.parent / "shared" / "corpora"
POLICIES = {"airline": REPO / "policies" / "airline", "coding": REPO / "policies" / "coding"}
PICK = (
    ("tau-airline-*", "airline"),
    ("codex-*", "coding"),
    ("sweagent-*", "coding"),
    ("ccv-*", "coding"),
)
MASK_PLACEHOLDER = "[old {tool} output omitted]"


# ----------------------------------------------------------------------------- policies


def policy_name_for(trace: str, forced: str | None) -> str:
    if forced is not None:
        return forced
    for pattern, name in PICK:
        if fnmatch.fnmatch(trace, pattern):
            return name
    return "default"


def load(name: str, context_window: int | None, steps: list[Any] | None = None) -> ctxwin.Policy:
    """A fresh policy by name (airline, coding, default) or path, with the window overridden.

    ctxwin has no public way to override a loaded policy's defaults, so ``--context-window``
    rebuilds the compiled policy with a revalidated config (see README).
    """
    if name == "default":
        policy = ctxwin.Policy()
    else:
        policy = ctxwin.load_policy(POLICIES.get(name, Path(name)))
    compiled = policy.compiled
    if context_window is not None:
        data = compiled.config.model_dump()
        data["context_window"] = context_window
        compiled = dataclasses.replace(compiled, config=PolicyConfig.model_validate(data))
    return ctxwin.Policy(compiled, steps=steps)


def window_tokens(policy: ctxwin.Policy) -> tuple[int, int, int]:
    """(trigger, target, context window) in tokens."""
    cfg = policy.config
    assert isinstance(cfg.context_window, int)
    return (*cfg.window.ceiling(cfg.context_window), cfg.context_window)


# ---------------------------------------------------------------- reference strategies


def _replace_results(conv: Conversation, texts: dict[tuple[int, int], str]) -> Conversation:
    """``conv`` with the results at the given locations holding the given texts."""
    if not texts:
        return conv
    messages = list(conv.messages)
    for mi in sorted({loc[0] for loc in texts}):
        blocks = list(messages[mi].blocks)
        for (m, bi), text in texts.items():
            if m == mi:
                block = blocks[bi]
                assert isinstance(block, ToolResult)
                blocks[bi] = block.with_text(text, keep_opaque=False)
        messages[mi] = messages[mi].with_blocks(tuple(blocks))
    return conv.with_messages(tuple(messages), same_structure=True)


class ObservationMasking:
    """Keep the newest ``keep`` tool results; every older one becomes a placeholder.

    A pure function of the request, recomputed for each request: the result that falls out
    of the newest ``keep`` changes the request ``keep`` results from its end, every turn.
    """

    def __init__(self, keep: int, placeholder: str = MASK_PLACEHOLDER) -> None:
        self.keep = keep
        self.placeholder = placeholder

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        refs = list(conversation.results())
        old = refs[: len(refs) - self.keep] if self.keep else refs
        texts = {
            ref.loc: self.placeholder.format(tool=ref.tool)
            for ref in old
            if context.block_tokens(ref.result) > 0
        }
        return _replace_results(conversation, texts)


class LangChainClearToolUses:
    """LangChain's ``ClearToolUsesEdit`` run on each request, as its middleware does.

    The conversation is converted to LangChain messages (consecutive assistant messages
    merged into one ``AIMessage`` with all its tool calls, results as ``ToolMessage``s with
    ids taken from ctxwin's pairing), the edit runs with LangChain's counter, and the
    results it cleared get its placeholder in the request.
    """

    def __init__(self, edit: Any, count_tokens: Callable[[Sequence[Any]], int]) -> None:
        self.edit = edit
        self.count_tokens = count_tokens

    def __call__(self, conversation: Conversation, context: Context) -> Conversation:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        pairing = conversation.pairing
        lc: list[Any] = []
        where: dict[int, tuple[int, int]] = {}
        ai_text: list[str] = []
        ai_calls: list[dict[str, Any]] = []

        def flush_ai() -> None:
            if ai_text or ai_calls:
                lc.append(AIMessage(content="\n".join(ai_text), tool_calls=list(ai_calls)))
                ai_text.clear()
                ai_calls.clear()

        for mi, msg in enumerate(conversation.messages):
            if msg.role == "assistant":
                for bi, b in enumerate(msg.blocks):
                    if isinstance(b, ToolCall):
                        try:
                            args = json.loads(b.arguments) if b.arguments else {}
                        except ValueError:
                            args = {"input": b.arguments}
                        if not isinstance(args, dict):
                            args = {"input": args}
                        ai_calls.append(
                            {"name": b.name, "args": args, "id": f"c{mi}_{bi}", "type": "tool_call"}
                        )
                    else:
                        ai_text.append(_text_of(b))
                continue
            flush_ai()
            texts: list[str] = []
            for bi, b in enumerate(msg.blocks):
                if isinstance(b, ToolResult):
                    call = pairing.call_of.get((mi, bi))
                    tid = f"c{call[0]}_{call[1]}" if call is not None else f"orphan{mi}_{bi}"
                    where[len(lc)] = (mi, bi)
                    lc.append(ToolMessage(content=_result_text(b), tool_call_id=tid))
                else:
                    texts.append(_text_of(b))
            if texts:
                cls = SystemMessage if msg.role == "system" else HumanMessage
                lc.append(cls(content="\n".join(texts)))
        flush_ai()
        edited = list(lc)
        self.edit.apply(edited, count_tokens=self.count_tokens)
        cleared = {
            loc: self.edit.placeholder for pos, loc in where.items() if edited[pos] is not lc[pos]
        }
        return _replace_results(conversation, cleared)


def _text_of(block: object) -> str:
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    raw = getattr(block, "raw", None)
    return json.dumps(raw, ensure_ascii=False, default=str) if raw is not None else ""


def _result_text(result: ToolResult) -> str:
    return "\n".join(p.text if hasattr(p, "text") else _text_of(p) for p in result.content)


def langchain_strategies(
    trigger: int, target: int
) -> tuple[dict[str, Callable[[], Any]], str | None]:
    """The LangChain steps (fresh per trace), or a note saying why there are none."""
    try:
        from langchain.agents.middleware.context_editing import ClearToolUsesEdit
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError as e:
        return {}, (
            f"LangChain reference skipped: {e}. Install langchain in a separate venv "
            "(see benchmarks/README.md) and run this script with it."
        )
    return {
        "LC": lambda: LangChainClearToolUses(
            ClearToolUsesEdit(trigger=trigger, keep=3), count_tokens_approximately
        ),
        "LC cal": lambda: LangChainClearToolUses(
            ClearToolUsesEdit(trigger=trigger, keep=3, clear_at_least=trigger - target),
            count_tokens_approximately,
        ),
    }, None


# ----------------------------------------------------------------------------- running

FITS_PER_TRACE = 1.10
"""Issue 10: a trace that never outgrows the window pays at most this x unmanaged (and
its group at most 1.00x in total)."""


@dataclasses.dataclass
class Row:
    trace: str
    format: str
    policy: str
    group: str
    trigger: int
    window: int
    result: ReplayResult
    window_only: ReplayResult
    refs: dict[str, ReplayResult]

    def verdict(self) -> str:
        r = self.result
        if self.group == "window":
            ok = r.peak_ratio <= 0.5 and r.cost_ratio <= 0.85
            return "ok" if ok else "MISS"
        return "ok" if r.cost_ratio <= FITS_PER_TRACE else "MISS"


def group_of(peak: int, trigger: int, window: int) -> str:
    if peak > window:
        return "window"
    return "trigger" if peak > trigger else "below"


def run_trace(path: Path, args: argparse.Namespace, lc_note: list[str]) -> Row | None:
    body = json.loads(path.read_text(encoding="utf-8"))
    try:
        fmt = ctxwin.detect(body)
    except ctxwin.CtxwinError as e:
        print(f"skip {path.name}: {e}", file=sys.stderr)
        return None
    name = path.stem
    pname = policy_name_for(name, args.policy)
    policy = load(pname, args.context_window)
    trigger, target, window = window_tokens(policy)
    try:
        result = replay(body, policy, format=fmt, name=name)
    except ctxwin.InputError as e:  # e.g. a stored request whose calls live on the server
        print(f"skip {path.name}: {e}", file=sys.stderr)
        return None
    window_only = replay(
        body,
        load(pname, args.context_window, steps=[ctxwin.Window(), ctxwin.BudgetGuard()]),
        format=fmt,
        name=name,
    )
    refs: dict[str, ReplayResult] = {}
    if not args.no_reference:
        mask = load(pname, args.context_window, steps=[ObservationMasking(args.mask_keep)])
        refs["mask"] = replay(body, mask, format=fmt, name=name)
        lc, note = langchain_strategies(trigger, target)
        if note and note not in lc_note:
            lc_note.append(note)
        for label, make in lc.items():
            refs[label] = replay(
                body, load(pname, args.context_window, [make()]), format=fmt, name=name
            )
    group = group_of(result.unmanaged.peak, trigger, window)
    label = pname if pname in ("default", *POLICIES) else Path(pname).name
    return Row(name, fmt, label, group, trigger, window, result, window_only, refs)


# ----------------------------------------------------------------------------- printing

GROUPS = {
    "window": "outgrow the context window (target: peak <= 0.5x, cost <= 0.85x)",
    "trigger": "pass the trigger, fit the window (target: cost <= 1.10x, sum <= 1.00x)",
    "below": "never reach the trigger (target: cost <= 1.10x, sum <= 1.00x)",
}


def _short(name: str, n: int = 34) -> str:
    return name if len(name) <= n else name[: n - 1] + "~"


def print_table(rows: list[Row], notes: list[str]) -> None:
    head = (
        f"{'trace':34s} {'policy':7s} {'req':>4s} {'input unm':>10s} {'input man':>10s} "
        f"{'cached unm':>10s} {'cached man':>10s} {'cost unm':>10s} {'cost man':>10s} "
        f"{'cost x':>6s} {'peak unm':>8s} {'peak man':>8s} {'peak x':>6s} {'prob u/m':>8s} "
        f"{'win-only':>8s} {'target':>6s}"
    )
    for group, title in GROUPS.items():
        members = [r for r in rows if r.group == group]
        if not members:
            continue
        print(f"\n== {len(members)} traces that {title}")
        print(head)
        print("-" * len(head))
        for row in members:
            r = row.result
            u, m = r.unmanaged, r.managed
            wo = row.window_only.cost_ratio
            print(
                f"{_short(row.trace):34s} {row.policy:7s} {u.requests:4d} {u.input_tokens:10,d} "
                f"{m.input_tokens:10,d} {u.cached_tokens:10,d} {m.cached_tokens:10,d} "
                f"{u.effective_cost:10,.0f} {m.effective_cost:10,.0f} {r.cost_ratio:6.3f} "
                f"{u.peak:8,d} {m.peak:8,d} {r.peak_ratio:6.3f} {u.problems:>4d}/{m.problems:<3d} "
                f"{wo:8.3f} {row.verdict():>6s}"
            )
        total_u = _sum(r.result.unmanaged for r in members)
        total_m = _sum(r.result.managed for r in members)
        total_w = _sum(r.window_only.managed for r in members)
        print("-" * len(head))
        print(
            f"{'sum':34s} {'':7s} {total_u.requests:4d} {total_u.input_tokens:10,d} "
            f"{total_m.input_tokens:10,d} {total_u.cached_tokens:10,d} "
            f"{total_m.cached_tokens:10,d} {total_u.effective_cost:10,.0f} "
            f"{total_m.effective_cost:10,.0f} "
            f"{_ratio(total_m.effective_cost, total_u.effective_cost):6.3f} "
            f"{total_u.peak:8,d} {total_m.peak:8,d} {_ratio(total_m.peak, total_u.peak):6.3f} "
            f"{total_u.problems:>4d}/{total_m.problems:<3d} "
            f"{_ratio(total_w.effective_cost, total_u.effective_cost):8.3f}"
        )
        worst_cost = max(members, key=lambda r: r.result.cost_ratio)
        worst_peak = max(members, key=lambda r: r.result.peak_ratio)
        best_cost = min(members, key=lambda r: r.result.cost_ratio)
        print(
            f"per trace: cost x from {best_cost.result.cost_ratio:.3f} ({best_cost.trace}) to "
            f"{worst_cost.result.cost_ratio:.3f} ({worst_cost.trace}); worst peak x "
            f"{worst_peak.result.peak_ratio:.3f} ({worst_peak.trace}); "
            f"targets: {sum(r.verdict() == 'ok' for r in members)}/{len(members)} ok"
            + (
                ""
                if group == "window"
                else "; sum <= 1.00x: "
                + ("ok" if total_m.effective_cost <= total_u.effective_cost else "MISS")
            )
        )
        over = [r for r in members if r.result.managed.peak > r.window]
        if over:
            print(
                "managed peak still over the context window: "
                + ", ".join(f"{r.trace} ({r.result.managed.peak:,} > {r.window:,})" for r in over)
            )
    if any(r.refs for r in rows):
        print_references(rows)
    for note in notes:
        print(f"\nnote: {note}")


def print_references(rows: list[Row]) -> None:
    labels = sorted({k for r in rows for k in r.refs}, key=["mask", "LC", "LC cal"].index)
    print("\n== reference strategies on the same traces (cost x / peak x against unmanaged)")
    head = f"{'trace':34s} {'group':7s} {'ctxwin':>13s}" + "".join(
        f" {label:>13s} {'prob':>4s}" for label in labels
    )
    print(head)
    print("-" * len(head))
    for group in GROUPS:
        members = [r for r in rows if r.group == group and r.refs]
        for row in members:
            line = f"{_short(row.trace):34s} {group:7s} {_pair(row.result):>13s}"
            for label in labels:
                ref = row.refs.get(label)
                line += f" {_pair(ref):>13s} {ref.managed.problems if ref else '':>4}"
            print(line)
        if members:
            line = f"{'sum of ' + group:34s} {'':7s} {_pair_sum([r.result for r in members]):>13s}"
            for label in labels:
                pair = _pair_sum([r.refs[label] for r in members if label in r.refs])
                line += f" {pair:>13s} {'':>4s}"
            print(line)
            print("-" * len(head))


def _pair(r: ReplayResult | None) -> str:
    return f"{r.cost_ratio:.3f}/{r.peak_ratio:.3f}" if r is not None else "-"


def _pair_sum(results: list[ReplayResult]) -> str:
    if not results:
        return "-"
    u = _sum(r.unmanaged for r in results)
    m = _sum(r.managed for r in results)
    return f"{_ratio(m.effective_cost, u.effective_cost):.3f}/{_ratio(m.peak, u.peak):.3f}"


def _sum(stats: Any) -> ReplayStats:
    total = ReplayStats(0, 0, 0, 0, 0)
    for s in stats:
        total = total + s
    return total


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


def to_json(rows: list[Row], notes: list[str]) -> dict[str, Any]:
    return {
        "traces": [
            {
                **row.result.to_dict(),
                "policy": row.policy,
                "group": row.group,
                "trigger_tokens": row.trigger,
                "context_window": row.window,
                "target": row.verdict(),
                "window_only": row.window_only.to_dict(),
                "reference": {k: v.to_dict() for k, v in row.refs.items()},
            }
            for row in rows
        ],
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpora", type=Path, default=CORPORA, help="folder of traces (format/*.json)"
    )
    ap.add_argument("--policy", help="force a policy: airline, coding, default, or a path")
    ap.add_argument("--context-window", type=int, help="override the policy's context window")
    ap.add_argument("--mask-keep", type=int, default=5, help="results kept by plain masking")
    ap.add_argument("--only", help="replay only traces whose file name matches this glob")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference strategies")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = ap.parse_args(argv)

    if not args.corpora.is_dir():
        print(f"no corpora at {args.corpora}: nothing to replay (skipped)")
        return 0
    files = sorted(args.corpora.glob("*/*.json"))
    if args.only:
        files = [f for f in files if fnmatch.fnmatch(f.name, args.only)]
    notes: list[str] = []
    rows = [row for f in files if (row := run_trace(f, args, notes)) is not None]
    if args.json:
        print(json.dumps(to_json(rows, notes), indent=2))
        return 0
    pols = sorted({(r.policy, r.trigger, r.window) for r in rows})
    print(
        f"{len(rows)} traces from {args.corpora}; counter: "
        f"{load('default', None).counter.name}; policies (trigger/context window tokens): "
        + ", ".join(f"{p} {t:,}/{w:,}" for p, t, w in pols)
    )
    print(
        "cost = 1.25 x uncached + 0.1 x cached input tokens; x = managed / unmanaged; "
        "win-only = cost x with the window and budget steps only; "
        "targets: issue 3 for traces that outgrow the window, issue 10 for the others"
    )
    print_table(rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
