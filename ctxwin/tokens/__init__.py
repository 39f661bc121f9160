"""Token counting: exact, offline, memoized; and the meter that counts requests.

See :mod:`ctxwin.tokens.counters` for how encodings are loaded without the network.
"""

from ctxwin.tokens.counters import (
    ApproximateCounter,
    CallableCounter,
    CounterFallbackWarning,
    TiktokenCounter,
    TokenCounter,
    TokenEncoder,
    get_counter,
)

__all__ = [
    "ApproximateCounter",
    "CallableCounter",
    "CounterFallbackWarning",
    "TiktokenCounter",
    "TokenCounter",
    "TokenEncoder",
    "get_counter",
]
