"""Ready summarizers over a client you already have: pass one to
``ctxwin.load_policy(folder, summarizer=...)`` and the policy's ``summarize`` rules use it.

- :func:`openai`: an ``openai.OpenAI`` / ``openai.AsyncOpenAI`` client (Chat Completions);
- :func:`anthropic`: an ``anthropic.Anthropic`` / ``anthropic.AsyncAnthropic`` client;
- :func:`langchain`: a LangChain chat model or any Runnable.

Each SDK is imported when its factory is called, never by ``import ctxwin``. Every summary
is asked with :data:`DEFAULT_PROMPT` (or your ``prompt``), which tells the model to keep
identifiers, paths, numbers and error lines verbatim. Every failure of the call raises
:class:`ctxwin.SummarizerError` (``provider``, ``status_code``, the SDK's exception as the
cause), so the ``summarize`` step falls back to the cap and the report says why. Each
request's ``timeout`` is what ctxwin still waits for that summary (:func:`time_left`, which
a summarizer of your own can pass to its client too).
"""

from ctxwin.steps._summaries import time_left
from ctxwin.summarizers._anthropic import anthropic
from ctxwin.summarizers._base import AsyncModelSummarizer, ModelSummarizer
from ctxwin.summarizers._langchain import langchain
from ctxwin.summarizers._openai import openai
from ctxwin.summarizers._prompt import DEFAULT_PROMPT

__all__ = [
    "DEFAULT_PROMPT",
    "AsyncModelSummarizer",
    "ModelSummarizer",
    "anthropic",
    "langchain",
    "openai",
    "time_left",
]

for _name in __all__:
    _member = globals()[_name]
    if hasattr(_member, "__qualname__"):
        _member.__module__ = "ctxwin.summarizers"
del _name, _member
