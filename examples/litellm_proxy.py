"""ctxwin as a LiteLLM hook, offline (mock responses): in-process through litellm.callbacks,
and the proxy's pre-call hook called as the proxy calls it.

    python examples/litellm_proxy.py

On a real proxy, put ``ctxwin_hook = CtxwinHook(ctxwin.load_policy("policy"))`` in a module
and list it in ``config.yaml``: ``litellm_settings: {callbacks: my_module.ctxwin_hook}``.
"""

from __future__ import annotations

import asyncio
import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of prices

import litellm

import ctxwin
from ctxwin.integrations.litellm import CtxwinHook

TURNS = 8
TOOLS = [
    {
        "type": "function",
        "function": {"name": "search_code", "parameters": {"type": "object"}},
    }
]


def search_code(query: str) -> str:
    hits = [{"path": f"src/{query}/{i}.py", "line": i, "text": "x = 1 " * 40} for i in range(80)]
    return json.dumps({"matches": hits})


async def agent(history: list[object]) -> None:
    for turn in range(TURNS):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "search_code", "arguments": json.dumps({"query": f"q{turn}"})},
        }
        response = await litellm.acompletion(
            model="gpt-4o", messages=history, tools=TOOLS, mock_tool_calls=[call]
        )
        history.append(response.choices[0].message)  # a litellm Message: accepted as is
        history.append({"role": "tool", "tool_call_id": f"c{turn}", "content": search_code("q")})


def main() -> None:
    hook = CtxwinHook(ctxwin.load_policy("examples/policy"))
    litellm.callbacks = [hook]  # in-process: acompletion runs the hook

    history: list[object] = [{"role": "user", "content": "Find the bug."}]
    asyncio.run(agent(history))
    report = hook.last_result.report
    print(f"in-process, last request: {report.tokens_before} -> {report.tokens_after} tokens")

    data = {"model": "gpt-4o", "messages": history, "tools": TOOLS}
    edited = asyncio.run(hook.async_pre_call_hook(None, None, data, "completion"))
    print(f"proxy hook: {len(json.dumps(edited['messages'], default=str))} characters sent")


if __name__ == "__main__":
    main()
