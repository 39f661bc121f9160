"""ctxwin where agents run: one module per framework, each importing its framework lazily.

- :mod:`ctxwin.integrations.langchain`: ``CtxwinMiddleware`` for LangChain's ``create_agent``;
- :mod:`ctxwin.integrations.langgraph`: ``pre_model_hook`` for LangGraph's prebuilt agents
  (``create_react_agent``, which LangGraph 1.x deprecates for ``langchain.agents.create_agent``:
  that one takes ``CtxwinMiddleware``), ``repair_messages`` for a ``StateGraph`` after
  ``interrupt()``;
- :mod:`ctxwin.integrations.pydantic_ai`: ``ContextWindow(policy)``, a capability for
  ``Agent(capabilities=[...])``, and ``process_history(policy)`` for ``ProcessHistory``;
- :mod:`ctxwin.integrations.openai_agents`: ``input_filter(policy)``, a
  ``call_model_input_filter`` for ``RunConfig``;
- :mod:`ctxwin.integrations.litellm`: ``CtxwinHook(policy)``, a LiteLLM ``CustomLogger``.

With ``recall`` on in the policy, the agent gets the ``recall`` tool: ``CtxwinMiddleware``
and ``ContextWindow`` register it themselves; ``recall_tool(policy)`` (LangChain/LangGraph,
pydantic-ai, OpenAI Agents) is the tool on its own, and ``CtxwinHook(policy,
add_recall_tool=True)`` adds its definition to LiteLLM requests.

Each takes a :class:`ctxwin.Policy` (``ctxwin.load_policy(...)``); anything else, a policy
path included, is a :class:`ctxwin.PolicyError` where it is passed.

Importing ``ctxwin`` imports none of them. Without its framework, an integration raises an
``ImportError`` that says which extra to install: ``ctxwin.integrations.langchain`` when it
is imported (its middleware is a subclass of LangChain's); the others, which import nothing
of their framework until used, at the first call of one of their constructors or factories
(``pre_model_hook``, ``ContextWindow``, ``process_history``, ``input_filter``,
``CtxwinHook``, ``recall_tool`` ...).
"""

__all__ = ()
