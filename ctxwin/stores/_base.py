"""The store contract: bytes by key, with a bounded wait, a TTL and a size limit.

A store holds what ctxwin must not lose or compute twice: the originals of shortened
results (recall) and the summary memo. Every method raises :class:`~ctxwin.StoreError`
(never a driver's own exception) when the store is down, slow past its ``timeout``, or
refuses a value; the engine catches it and falls back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from ctxwin._exceptions import PolicyError, StoreError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "MAX_TTL",
    "REDIS_SCHEMES",
    "SCHEMES",
    "SECRET_PARAMETERS",
    "SQLITE_FORM",
    "Store",
    "check_limits",
    "check_size",
    "check_value",
    "mask_url",
    "masking",
    "over_limit",
    "scrub",
    "secrets_of",
    "sqlite_file",
    "store_argument",
    "url_problem",
]

DEFAULT_TIMEOUT = 0.5
"""Seconds a read or write may take before the store counts as down."""
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""The largest value a store keeps (bytes); a larger one is refused with a StoreError."""
MAX_TIMEOUT = 86_400
"""The longest ``timeout`` (a day), as the policy's ``store.timeout``: Python's waits refuse
more than ``threading.TIMEOUT_MAX`` with an ``OverflowError``."""
MAX_TTL = 10**15
"""The largest ``ttl`` (seconds) and ``max_bytes``, as the policy's ``store:`` keys: far
above any use, and small enough that expiry times stay exact floats."""
_BOUNDS = {"timeout": MAX_TIMEOUT, "ttl": MAX_TTL, "max_bytes": MAX_TTL, "max_total": MAX_TTL}


@runtime_checkable
class Store(Protocol):
    """Bytes by string key. ``url`` says which store it is (passwords masked)."""

    url: str

    def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when there is none (or it expired)."""
        ...

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Keep ``value`` under ``key`` (``ttl`` seconds, or the store's default TTL)."""
        ...

    def close(self) -> None:
        """Release connections and files (the store may be reopened by URL)."""
        ...


SECRET_PARAMETERS = frozenset({"password", "pass", "passwd", "pwd", "secret", "token", "auth"})
"""Query parameters (any case) whose values :func:`mask_url` masks, as redis-py's
``?password=...``: a value runs to the next ``&`` (a ``;`` is part of it, as redis-py
reads the query with ``parse_qs``)."""


def _split(url: str) -> tuple[str, str, str, str]:
    """``url`` as (up to the password, the password, from the ``@`` to the query, the
    query). The password is what follows the userinfo's first ``:`` up to the LAST ``@``
    of the URL, whatever it holds (``@``, and ``?``, ``#`` or ``/`` typed as they are,
    which :func:`url_problem` refuses), since no reading of the text can tell an ``@`` in
    a query (``?client_name=a@b``) from one ending a password (``h:6379/0?client_name=a``
    of user ``h``). A URL without a ``:`` before that ``@`` has no password; its query
    starts at the first ``?``. No userinfo comes before a path (``sqlite:///a@b.db``)."""
    scheme, sep, rest = url.partition("://")
    at = rest.rfind("@")
    user, colon, password = rest[: max(at, 0)].partition(":")
    if not sep or not colon or rest.startswith("/"):
        return url.partition("?")[0], "", "", url.partition("?")[2]
    host, _, query = rest[at:].partition("?")
    return f"{scheme}://{user}:", password, host, query


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for errors and reports): the
    userinfo's (``redis://user:***@host``) and a query parameter's named in
    :data:`SECRET_PARAMETERS` (``?password=***``). An ``@`` after the first ``?`` may end
    a password (:func:`_split`) or sit in a query value (``?password=p@ss``): what either
    reading takes for a secret is masked, so a URL refused for it shows neither.

    >>> mask_url("redis://:hunt@er2@127.0.0.1:6379/0?db=1&Password=x")
    'redis://:***@127.0.0.1:6379/0?db=1&Password=***'
    """
    hidden = [False] * len(url)
    for lo, hi in _secret_spans(url):
        hidden[lo:hi] = [True] * (hi - lo)
    start, password, host, _ = _split(url)
    empty = len(start) if host and not password else -1  # ':@': shown masked all the same
    out: list[str] = []
    for i, ch in enumerate(url):
        if i == empty:
            out.append("***")
        if not hidden[i]:
            out.append(ch)
        elif i == 0 or not hidden[i - 1]:
            out.append("***")
    return "".join(out)


def _secret_spans(url: str) -> list[tuple[int, int]]:
    """Where ``url``'s secrets are, as (start, end) offsets, under both readings of an
    ``@`` after the first ``?``: as the end of the userinfo (:func:`_split`), and as part of
    the query (the userinfo then ends at the last ``@`` before the first ``?``)."""
    start, password, host, query = _split(url)
    spans = [(len(start), len(start) + len(password))] if password else []
    tail = len(start) + len(password) + len(host)
    if "?" in url[tail:]:
        spans += _parameter_spans(query, len(url) - len(query))
    head, q, first_query = url.partition("?")
    start, password, _, _ = _split(head)
    if password:
        spans.append((len(start), len(start) + len(password)))
    if q:
        spans += _parameter_spans(first_query, len(head) + 1)
    return spans


def _parameter_spans(query: str, offset: int) -> list[tuple[int, int]]:
    """The values of ``query``'s parameters named in :data:`SECRET_PARAMETERS`, as offsets
    in the URL (``query`` starts at ``offset``). The query is read as redis-py reads it
    (``parse_qs``: split at ``&`` only, a value from its parameter's first ``=`` to the next
    ``&``), each piece parsed by ``parse_qsl`` itself and mapped back to its offsets."""
    spans = []
    for piece in query.split("&"):
        parsed = parse_qsl(piece)  # [(name, value)], or [] for a piece with no value
        if parsed and parsed[0][0].strip().lower() in SECRET_PARAMETERS:
            spans.append((offset + piece.index("=") + 1, offset + len(piece)))
        offset += len(piece) + 1
    return spans


def secrets_of(url: str) -> list[str]:
    """The secrets ``url`` holds (as typed and unquoted), under either reading of an ``@``
    in its query (:func:`mask_url`), longest first, with the pieces a driver may quote of a
    password it cut short at a ``#``, ``?`` or ``/``; a query value also as redis-py reads it
    (``+`` as a space)."""
    found = [url[lo:hi] for lo, hi in _secret_spans(url)]
    readings = ((s, unquote(s), unquote_plus(s), *re.split(r"[#?/]", s)) for s in found)
    pieces = {p for reading in readings for p in reading if len(p) >= 3}
    return sorted(pieces, key=len, reverse=True)


def masking(url: str) -> Callable[[str], str]:
    """A message (a driver's, which may quote the password) with the secrets of ``url``
    masked (:func:`secrets_of`): for the URL a store object of the user's gives."""
    secrets = secrets_of(url)
    return lambda text: scrub(text, secrets)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` (a driver's or a provider's message) with ``secrets`` masked (a URL's:
    :func:`secrets_of`): every place any of them is found in ``text`` as given, so that
    secrets that overlap (the two readings of a query holding an ``@``) are each masked."""
    hidden = [False] * len(text)
    for secret in secrets:
        at = text.find(secret) if secret else -1
        while at >= 0:
            hidden[at : at + len(secret)] = [True] * len(secret)
            at = text.find(secret, at + 1)
    if not any(hidden):
        return text
    return "".join(
        "***" if hide and (i == 0 or not hidden[i - 1]) else "" if hide else ch
        for i, (ch, hide) in enumerate(zip(text, hidden, strict=True))
    )


SCHEMES = ("memory", "sqlite", "redis", "rediss", "unix")
"""The schemes of the stores :func:`~ctxwin.stores.open_store` opens (``unix``: a Redis
server's Unix socket, as redis-py names it)."""
REDIS_SCHEMES = ("redis", "rediss", "unix")
"""The schemes of a Redis store (TCP, TLS, a Unix socket): redis-py's ``from_url``."""


def url_problem(url: str) -> str | None:
    """What is wrong with a store URL, as the policy's ``store:`` key says it (the password
    masked; None: nothing seen before the store opens): a scheme no store has, or a scheme
    without what its store needs, which it would refuse only at its first use, each request
    then noting the failure and falling back (``sqlite`` without a file, ``redis`` without
    ``://``, ``unix`` without a socket path or with a host, which the driver reads past)."""
    scheme, sep, rest = url.partition("://")
    shown = f"{mask_url(url)!r:.60}"
    if (scheme if sep else url) not in SCHEMES:
        return (
            f"unknown store {shown}: use memory, sqlite:///path.db, redis://host:port/db "
            "(rediss:// for TLS, unix:///path/redis.sock for a socket)"
        )
    scheme = scheme if sep else url
    if scheme == "sqlite" and sqlite_file(url) is None:
        return f"not a SQLite store URL: {shown} ({SQLITE_FORM})"
    if scheme in ("redis", "rediss") and not sep:
        return f"store {shown} names no server: use {scheme}://host:port/db"
    if scheme == "unix":
        wrong = _unix_problem(url, rest, shown)
        if wrong is not None:
            return wrong
    start, password, at, _ = _split(url)
    odd = sorted(set("?#/") & set(start[len(scheme) + 3 :] + password if at else ""))
    if odd and scheme in REDIS_SCHEMES:  # the driver reads the host from the password (and
        return (  # its error quotes a piece of it), or the password from a query ('@' in it)
            f"store {shown}: its password (up to the last '@') holds "
            f"{' '.join(map(repr, odd))}, which a URL cannot carry as typed: percent-encode it "
            f"({', '.join(f'{c} as %{ord(c):02X}' for c in odd)}), and an '@' in the path "
            "or query as %40"
        )
    return None


def _unix_problem(url: str, rest: str, shown: str) -> str | None:
    """What is wrong with a ``unix://`` URL's socket, as redis-py reads it (``urlparse``:
    the socket is the path, a host is read past): no path, or a host (``unix://redis.sock``
    dials ``''``, ``unix://tmp/redis.sock`` dials ``/redis.sock``). ``rest``: what follows
    ``unix://``. A password holding ``?``, ``#`` or ``/`` moves both: :func:`url_problem`
    says that instead."""
    if set("?#/") & set(_split(url)[1]):
        return None
    parts = urlsplit("unix://" + rest)  # "unix" alone: rest is ""
    host, path = parts.netloc.rpartition("@")[2], unquote(parts.path)
    use = "use unix:///path/redis.sock?db=0 (the absolute path after three slashes)"
    if host:
        dials = f"which redis reads past: it would dial {path!r:.60}"
        if not path:
            dials = "and no socket path: redis would dial ''"
        return f"store {shown} names a host, {host!r:.40}, {dials}; {use}"
    if not path.strip("/"):
        return f"store {shown} names no socket: {use}"
    return None


SQLITE_FORM = "use sqlite:///relative.db or sqlite:////absolute/path.db"
"""How a SQLite store URL names its file."""


def sqlite_file(url: str) -> str | None:
    """The file a ``sqlite:///`` URL names, as written (None: it names none)."""
    scheme, sep, rest = url.partition("://")
    path = rest[1:].partition("?")[0]
    return path if scheme == "sqlite" and sep and rest.startswith("/") and path else None


def store_argument(given: object) -> Store | str | None:
    """A policy's ``store=`` argument, checked as its ``store:`` key is: a URL of a known
    scheme or a :class:`Store` object; else a PolicyError keyed ``store``."""
    if given is None:
        return None
    if isinstance(given, str):
        wrong = url_problem(given)
        if wrong is not None:
            raise PolicyError(wrong, key="store")
        return given
    if isinstance(given, type):
        raise PolicyError(
            f"pass a store object, not the class {given.__name__} (e.g. {given.__name__}())",
            key="store",
        )
    if not isinstance(given, Store):
        raise PolicyError(
            "must be a store URL (memory, sqlite:///path.db, redis://host:port/db, rediss://, "
            "unix://) or a store "
            "object (with url, get, put and close: the ctxwin.stores.Store protocol), not "
            f"{type(given).__name__}",
            key="store",
        )
    return given


def check_limits(url: str, **limits: float | None) -> None:
    """A StoreError naming the first limit that is not a positive number (``ttl`` may be
    ``None``: no expiry) or is past its bound (:data:`MAX_TIMEOUT`, :data:`MAX_TTL`)."""
    for name, value in limits.items():
        if value is None and name == "ttl":
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and value > 0):  # type: ignore[operator]  # NaN is not > 0
            said = f"{name} must be a positive number, not {value!r:.40}"
        elif value > _BOUNDS.get(name, value):  # type: ignore[operator]
            unit = "bytes" if name.startswith("max_") else "seconds"
            said = f"{name} must be at most {_BOUNDS[name]:,} {unit}, not {value!r:.40}"
        else:
            continue
        raise StoreError(said, url=mask_url(url), operation="open")


_OVER_LIMIT = "is over the store's limit of"


def check_size(url: str, value: bytes, max_bytes: int) -> None:
    """Refuse a value over the store's limit (a StoreError naming both sizes)."""
    if len(value) > max_bytes:
        raise StoreError(
            f"{url}: value of {len(value):,} bytes {_OVER_LIMIT} {max_bytes:,} bytes",
            url=url,
            operation="put",
            refused=True,
        )


def over_limit(error: StoreError) -> bool:
    """Whether ``error`` refused a value for its size (:func:`check_size`: over
    ``max_bytes``), not because the store is full (a Redis at ``maxmemory``, a full disk)
    or down."""
    return error.refused and _OVER_LIMIT in str(error)


def check_value(url: str, key: str, value: object, why: str) -> bytes | None:
    """What a driver read, if it is bytes or nothing; else a StoreError saying ``why``."""
    if value is None or isinstance(value, bytes):
        return value
    raise StoreError(
        f"{url}: the value under {key!r:.80} is {type(value).__name__}, not bytes ({why})",
        url=url,
        operation="get",
    )
