"""A LangGraph ``StateGraph`` with a human in the loop, repaired by ctxwin — runs offline.

The agent proposes tool calls; a human approves each through ``interrupt()``. When the
human declines, the graph goes on with the human's message instead of the call's result,
and the next request would be rejected by the provider (a call without its result). The
``repair`` node on the way into the agent puts the missing result in the state, with the
policy's text, before the human message; the agent node sends the model what ctxwin makes
of the history (``pre_model_hook``), the state keeping it whole.

Run:  pip install 'ctxwin[langgraph]' && python examples/langgraph_hitl.py
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

import ctxwin
from ctxwin.integrations.langgraph import pre_model_hook, repair_messages

POLICY = {
    "context_window": 6000,
    "tools": {"read_file": {"max_tokens": 300}},
    "repair": {"missing_result": "{tool} was declined by the user"},
}


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{i:4d}  total += line_{i}.amount  # {path}" for i in range(300))


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def call(n: int, name: str, path: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": {"path": path}, "id": f"call_{n}"}])


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(policy: ctxwin.Policy, model: Any) -> Any:
    edit = pre_model_hook(policy)

    def agent(state: State) -> dict[str, Any]:
        request = edit.invoke(state)["llm_input_messages"]
        return {"messages": [model.invoke(request)]}

    def route(state: State) -> str:
        last = state["messages"][-1]
        return "approve" if isinstance(last, AIMessage) and last.tool_calls else END

    def approve(state: State) -> Command[Any]:
        answer = interrupt({"calls": state["messages"][-1].tool_calls})
        if answer == "yes":
            return Command(goto="tools")
        return Command(goto="repair", update={"messages": [HumanMessage(answer)]})

    graph = StateGraph(State)
    graph.add_node("repair", repair_messages(policy))
    graph.add_node("agent", agent)
    graph.add_node("approve", approve, destinations=("tools", "repair"))
    graph.add_node("tools", ToolNode([read_file, delete_file]))
    graph.add_edge(START, "repair")
    graph.add_edge("repair", "agent")
    graph.add_conditional_edges("agent", route, ["approve", END])
    graph.add_edge("tools", "repair")
    return graph.compile(checkpointer=InMemorySaver())


def main() -> int:
    policy = ctxwin.load_policy(POLICY)
    model = GenericFakeChatModel(
        messages=iter(
            [
                call(1, "read_file", "src/totals.py"),
                call(2, "delete_file", "src/totals.py"),
                AIMessage("Understood: I kept src/totals.py and fixed the sum instead."),
            ]
        )
    )
    graph = build(policy, model)
    config = {"configurable": {"thread_id": "demo"}}
    graph.invoke({"messages": [HumanMessage("The totals are wrong.")]}, config)
    graph.invoke(Command(resume="yes"), config)  # read_file approved
    state = graph.invoke(Command(resume="no: never delete files"), config)  # declined
    for m in state["messages"]:
        first = m.text.splitlines()[0] if m.text else ""
        text = first if len(m.text) < 70 else first[:60] + " ..."
        calls = [c["name"] for c in getattr(m, "tool_calls", [])]
        status = getattr(m, "status", "")
        print(f"{m.type:6} {status:7} {calls or text!s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
