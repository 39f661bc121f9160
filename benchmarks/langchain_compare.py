"""Per-request time: LangChain's ClearToolUsesEdit against ctxwin on the same histories.

    /tmp/lcvenv/bin/python benchmarks/langchain_compare.py [--sizes 5000,10000,20000,40000,60000]

LangChain is not a dependency of ctxwin: run this in an environment of its own, e.g.

    python3 -m venv /tmp/lcvenv
    /tmp/lcvenv/bin/pip install langchain langchain-core -e .

For each size, one synthetic coding-agent history (benchmarks/_histories.py, code-like tool
results) is cut to about that many tokens and sent as the next request, in two settings:

- ``acting``: the trigger is half the history, so every strategy clears old tool results on
  this request (ctxwin: trigger 0.5 x tokens, target 0.3 x, keep_rounds 2; LangChain:
  trigger half of its own count, keep 3, and ``clear_at_least`` 0.2 x its count where set);
- ``idle``: LangChain's default trigger (100,000) and ctxwin's default policy (128k window,
  trigger 0.6): nothing is cleared, only counted.

Timed per request, median of ``--repeat`` runs:

- ``LC mw``: ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)]).wrap_model_call`` —
  what LangChain does before each model call: a deepcopy of the messages, then the edit,
  with its default counter (``count_tokens_approximately``, 4 chars per token);
- ``LC edit``: ``ClearToolUsesEdit.apply`` alone (no deepcopy), same counter;
- ``+cal``: the same with ``clear_at_least`` (it recounts every message after each result
  it clears);
- ``LC exact``: ``ClearToolUsesEdit.apply`` with an exact o200k_base counter
  (tiktoken, what ctxwin counts with), as ``token_counter=`` would be given;
- ``ctxwin ss``: ctxwin's steady state: one policy applied every earlier request of this
  conversation (untimed), then each of the last 5 requests (up to this size, one round
  longer each) is timed;
- ``ctxwin cold``: the first apply of a fresh policy on this request.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from _histories import coding_history, cut_to_tokens, request_points

import ctxwin
import ctxwin.tokens


def _import_langchain() -> Any:
    try:
        from langchain.agents.middleware import context_editing
    except ImportError as e:
        sys.exit(
            f"langchain is not importable here ({e}).\n"
            "This benchmark needs LangChain v1 in its own environment (never a ctxwin "
            "dependency):\n"
            "    python3 -m venv /tmp/lcvenv\n"
            "    /tmp/lcvenv/bin/pip install langchain langchain-core -e .\n"
            "    /tmp/lcvenv/bin/python benchmarks/langchain_compare.py"
        )
    return context_editing


def to_langchain(messages: Sequence[dict[str, Any]]) -> tuple[Any, list[Any]]:
    """OpenAI-chat dicts as LangChain messages: (system message, the rest)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    system = None
    out: list[Any] = []
    names: dict[str, str] = {}
    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role == "system":
            system = SystemMessage(content=content)
        elif role == "user":
            out.append(HumanMessage(content=content))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or ():
                names[c["id"]] = c["function"]["name"]
                calls.append(
                    {
                        "name": c["function"]["name"],
                        "args": json.loads(c["function"]["arguments"]),
                        "id": c["id"],
                        "type": "tool_call",
                    }
                )
            out.append(AIMessage(content=content, tool_calls=calls))
        elif role == "tool":
            tid = m["tool_call_id"]
            out.append(ToolMessage(content=content, tool_call_id=tid, name=names.get(tid)))
    return system, out


def exact_counter() -> Callable[[Sequence[Any]], int]:
    """An exact o200k_base counter over LangChain messages (tiktoken, as ctxwin loads it)."""
    enc = ctxwin.tokens.counters._encoding("o200k_base", None)
    assert enc is not None

    def count(messages: Sequence[Any]) -> int:
        n = 0
        for m in messages:
            content = m.content if isinstance(m.content, str) else json.dumps(m.content)
            n += 3 + len(enc.encode_ordinary(content))  # type: ignore[attr-defined]
            for c in getattr(m, "tool_calls", None) or ():
                n += 3 + len(enc.encode_ordinary(c["name"] + json.dumps(c["args"])))  # type: ignore[attr-defined]
        return n

    return count


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def n_cleared_lc(messages: Sequence[Any]) -> int:
    return sum(1 for m in messages if m.response_metadata.get("context_editing", {}).get("cleared"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes", default="5000,10000,20000,40000,60000", help="tokens, comma-separated"
    )
    ap.add_argument("--repeat", type=int, default=20, help="runs per figure (median)")
    ap.add_argument("--content", choices=["code", "words"], default="code")
    args = ap.parse_args(argv)

    ce = _import_langchain()
    import langchain
    import langchain_core
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages.utils import count_tokens_approximately

    sizes = [int(s) for s in args.sizes.split(",")]
    long = coding_history(120, result_chars=1700, content=args.content)
    counter = ctxwin.get_counter("o200k_base")
    exact = exact_counter()
    model = FakeListChatModel(responses=["ok"])

    print(
        f"langchain {langchain.__version__}, langchain-core {langchain_core.__version__}; "
        f"ctxwin {ctxwin.__version__} (counter engine "
        f"{getattr(counter, 'engine', '?')}); Python {sys.version.split()[0]}"
    )
    print(f"per-request time in ms, median of {args.repeat} runs; 'cl' = results cleared")
    for setting in ("acting", "idle"):
        print()
        print(f"setting: {setting}")
        head = (
            f"{'tokens':>7s} {'msgs':>5s} | {'LC mw':>7s} {'LC edit':>8s} {'+cal':>7s} "
            f"{'LC exact':>9s} {'+cal':>8s} | {'ctxwin ss':>9s} {'cold':>7s} | "
            f"{'cl LC':>5s} {'cl +cal':>7s} {'cl ctxwin':>9s}"
        )
        print(head)
        print("-" * len(head))
        for size in sizes:
            msgs = cut_to_tokens(long, size)
            tokens = (
                ctxwin.Policy(format="openai-chat").apply({"messages": msgs}).report.tokens_before
            )
            system, lc_msgs = to_langchain(msgs)
            approx = count_tokens_approximately(lc_msgs)
            exact_n = exact(lc_msgs)
            if setting == "acting":
                cfg: dict[str, Any] = {
                    "window": {
                        "trigger": tokens // 2,
                        "target": int(tokens * 0.3),
                        "keep_rounds": 2,
                    }
                }
                lc_plain = ce.ClearToolUsesEdit(trigger=approx // 2, keep=3)
                lc_cal = ce.ClearToolUsesEdit(
                    trigger=approx // 2, keep=3, clear_at_least=int(approx * 0.2)
                )
                ex_plain = ce.ClearToolUsesEdit(trigger=exact_n // 2, keep=3)
                ex_cal = ce.ClearToolUsesEdit(
                    trigger=exact_n // 2, keep=3, clear_at_least=int(exact_n * 0.2)
                )
            else:
                cfg = {}
                lc_plain = ce.ClearToolUsesEdit()
                lc_cal = ce.ClearToolUsesEdit(clear_at_least=20_000)
                ex_plain, ex_cal = lc_plain, lc_cal

            mw = ce.ContextEditingMiddleware(edits=[lc_plain])
            request = ModelRequest(model=model, messages=lc_msgs, system_message=system)
            t_mw, _ = timed(
                lambda mw=mw, r=request: mw.wrap_model_call(r, lambda q: q), args.repeat
            )

            def run(edit: Any, count: Any, lc_msgs: list[Any] = lc_msgs) -> list[Any]:
                edited = list(lc_msgs)
                edit.apply(edited, count_tokens=count)
                return edited

            t_edit, out_plain = timed(
                lambda e=lc_plain: run(e, count_tokens_approximately), args.repeat
            )
            t_cal, out_cal = timed(lambda e=lc_cal: run(e, count_tokens_approximately), args.repeat)
            t_ex, _ = timed(lambda e=ex_plain: run(e, exact), max(5, args.repeat // 4))
            t_excal, _ = timed(lambda e=ex_cal: run(e, exact), max(5, args.repeat // 4))

            bodies = [{"messages": msgs[:t]} for t in request_points(msgs)]
            body = bodies[-1]
            last = min(5, len(bodies) - 1)
            ss_times, cold_times = [], []
            result = None
            for _ in range(args.repeat):
                policy = ctxwin.Policy(copy.deepcopy(cfg), format="openai-chat")
                for b in bodies[:-last]:  # the policy followed the conversation up to here
                    policy.apply(b)
                for b in bodies[-last:]:  # the last requests, one round longer each: timed
                    t0 = time.perf_counter()
                    result = policy.apply(b)
                    ss_times.append(time.perf_counter() - t0)
                policy = ctxwin.Policy(copy.deepcopy(cfg), format="openai-chat")
                t0 = time.perf_counter()
                policy.apply(body)
                cold_times.append(time.perf_counter() - t0)
            assert result is not None
            cl_ctx = sum(1 for e in result.report.edits if e.step == "window")
            print(
                f"{tokens:7d} {len(msgs):5d} | {t_mw * 1e3:7.2f} {t_edit * 1e3:8.2f} "
                f"{t_cal * 1e3:7.2f} {t_ex * 1e3:9.2f} {t_excal * 1e3:8.2f} | "
                f"{statistics.median(ss_times) * 1e3:9.3f} "
                f"{statistics.median(cold_times) * 1e3:7.2f} | "
                f"{n_cleared_lc(out_plain):5d} {n_cleared_lc(out_cal):7d} {cl_ctx:9d}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
