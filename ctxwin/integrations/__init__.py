"""ctxwin where agents run: one module per framework, each importing its framework lazily.

- :mod:`ctxwin.integrations.pydantic_ai`: ``ContextWindow(policy)``, a capability for
  ``Agent(capabilities=[...])``, and ``process_history(policy)`` for ``ProcessHistory``;
- :mod:`ctxwin.integrations.openai_agents`: ``input_filter(policy)``, a
  ``call_model_input_filter`` for ``RunConfig``;
- :mod:`ctxwin.integrations.litellm`: ``CtxwinHook(policy)``, a LiteLLM ``CustomLogger``.

Importing this package imports no framework; importing a module of it imports its framework
(or raises an :class:`ImportError` with the extra to install).
"""

__all__ = ()  # the modules, each imported on its own
