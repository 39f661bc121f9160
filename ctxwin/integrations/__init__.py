"""ctxwin where agents run: one module per framework, each importing its framework lazily.

- :mod:`ctxwin.integrations.langchain`: ``CtxwinMiddleware`` for LangChain's ``create_agent``;
- :mod:`ctxwin.integrations.langgraph`: ``pre_model_hook`` for LangGraph's prebuilt agents,
  ``repair_messages`` for a ``StateGraph`` after ``interrupt()``;
- :mod:`ctxwin.integrations.pydantic_ai`: ``ContextWindow(policy)``, a capability for
  ``Agent(capabilities=[...])``, and ``process_history(policy)`` for ``ProcessHistory``;
- :mod:`ctxwin.integrations.openai_agents`: ``input_filter(policy)``, a
  ``call_model_input_filter`` for ``RunConfig``;
- :mod:`ctxwin.integrations.litellm`: ``CtxwinHook(policy)``, a LiteLLM ``CustomLogger``.

With ``recall`` on in the policy, the agent gets the ``recall`` tool: ``CtxwinMiddleware``
and ``ContextWindow`` register it themselves; ``recall_tool(policy)`` (LangChain/LangGraph,
pydantic-ai, OpenAI Agents) is the tool on its own, and ``CtxwinHook(policy,
add_recall_tool=True)`` adds its definition to LiteLLM requests.

Importing ``ctxwin`` imports none of them; importing one without its framework raises an
``ImportError`` that says which extra to install.
"""

__all__ = ()
