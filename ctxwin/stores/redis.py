"""The Redis store: one store shared by every process and machine that reaches the server.

``redis://[:password@]host:port/db``, ``rediss://`` (TLS) or
``unix://[:password@]/path/to/redis.sock?db=0`` (a Unix socket), as redis-py's ``from_url``
reads them. The client (``pip install 'ctxwin[redis]'``) is imported when the store opens.
Every command waits at most ``timeout`` seconds to connect and to read, and is never
retried: a server that is down or slow costs one bounded wait, then a
:class:`~ctxwin.StoreError`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from ctxwin._exceptions import StoreError
from ctxwin._lazy import require as lazy_require
from ctxwin.stores._base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    check_limits,
    check_size,
    check_value,
    mask_url,
    scrub,
    secrets_of,
)

__all__ = ["PREFIX", "RedisStore"]

T = TypeVar("T")

PREFIX = "ctxwin:"
"""Put before every key, so ctxwin's keys keep apart from the rest of a shared server."""

_LONGEST = """
local px = ARGV[2]
local left = redis.call('PTTL', KEYS[1])
if left == -1 then
  return redis.call('SET', KEYS[1], ARGV[1])
end
if left > tonumber(px) then
  px = string.format('%.0f', left)
end
return redis.call('SET', KEYS[1], ARGV[1], 'PX', px)
"""
"""``SET`` with ``PX`` that never shortens the life the key has left: a key without expiry
(``PTTL`` -1) stays without, one that lives longer keeps its longer life (another policy
on the server with a longer TTL, or none). One script, so atomic; Redis 2.6 and later.
``PX`` goes to ``SET`` as digits, never as a Lua number: Redis writes those as ``1e+17``
and refuses it, which from a TTL of 1e14 s up failed every put (a life left past 2**53 ms,
285,000 years, is read as a double, so it is kept to within its last 64 ms)."""


def _redis(url: str) -> Any:
    """The ``redis`` package, or an ImportError with the install hint."""
    return lazy_require("redis", "redis", f"the store {mask_url(url)}")


class RedisStore:
    """Values in a Redis server (``store: redis://host:6379/0``).

    Opening connects to nothing: the first get or put does (so a server that is down makes
    those fail, one at a time, never the policy load). ``prefix`` starts every key.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        ttl: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        prefix: str = PREFIX,
    ) -> None:
        check_limits(url, timeout=timeout, ttl=ttl, max_bytes=max_bytes)
        self.url = mask_url(url)
        self._secrets = secrets_of(url)
        self.timeout = timeout
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.prefix = prefix
        redis = _redis(url)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._response_error: type[BaseException] = redis.ResponseError
        try:
            retry = importlib.import_module("redis.retry")
            backoff = importlib.import_module("redis.backoff")
            self._client: Any = redis.Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry_on_timeout=False,
                retry=retry.Retry(backoff.NoBackoff(), 0),
                health_check_interval=0,
            )
            # a connection built, not connected: a URL parameter the client does not take
            # (``?token=``) is refused now, not as a bare TypeError at the first get
            pool = self._client.connection_pool
            pool.connection_class(**pool.connection_kwargs)
        except (ValueError, TypeError, *self._errors) as e:
            hint = " (a URL parameter redis does not take?)" if isinstance(e, TypeError) else ""
            raise StoreError(
                f"{self.url}: cannot open: {self._told(e)}{hint}",
                url=self.url,
                operation="open",
            ) from e
        if pool.connection_kwargs.get("decode_responses"):  # every get would give back str
            raise StoreError(  # redis-py decodes for any value given there, even "false"
                f"{self.url}: decode_responses is set in the URL: the client would give back "
                "text, and ctxwin keeps bytes (no recall or summary could be read); remove it",
                url=self.url,
                operation="open",
            )

        self._longest = self._client.register_script(_LONGEST)  # loaded at its first call
        self._scripted = True
        """Whether puts with a TTL go through :data:`_LONGEST` (until the server refuses
        scripts: :meth:`_set_longest` then)."""

    def get(self, key: str) -> bytes | None:
        value = self._run("get", lambda: self._client.get(self.prefix + key))
        return check_value(self.url, key, value, "decode_responses is set in the URL?")

    def put(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        check_size(self.url, value, self.max_bytes)
        life = ttl if ttl is not None else self.ttl
        name = self.prefix + key
        if life is not None and life <= 0:  # already expired: what was there goes too
            self._run("put", lambda: self._client.delete(name))
            return
        if life is None:  # no expiry: never shorter than the one the key has
            self._run("put", lambda: self._client.set(name, value))
            return
        px = max(1, round(life * 1000))
        if self._scripted:
            try:
                self._run("put", lambda: self._longest(keys=[name], args=[value, px]))
                return
            except StoreError as e:
                if not self._no_scripts(e.__cause__):
                    raise
                self._scripted = False  # a user without EVAL rights, a server without Lua
        self._run("put", lambda: self._set_longest(name, value, px))

    def _set_longest(self, name: str, value: bytes, px: int) -> object:
        """:data:`_LONGEST` in two commands, where scripts are refused: another process may
        put in between, and its life is then the one the key keeps."""
        left = self._client.pttl(name)
        if left == -1:
            return self._client.set(name, value, keepttl=True)
        return self._client.set(name, value, px=max(px, left))

    def _no_scripts(self, error: BaseException | None) -> bool:
        """Whether the server refused the script itself: ``NOPERM`` (an ACL user with
        ``+@read +@write``, which was all ctxwin needed), or no ``EVALSHA`` at all."""
        if not isinstance(error, self._response_error):
            return False
        text = str(error).lower()  # the command named: a refused key is no refused script
        refused = type(error).__name__ == "NoPermissionError" or "noperm" in text
        return (refused or "unknown command" in text) and ("eval" in text or "script" in text)

    def put_new(self, key: str, value: bytes, *, ttl: float | None = None) -> bytes:
        """Keep ``value`` unless ``key`` holds one already (``SET NX``: the first writer
        wins across processes and machines); the value it holds now."""
        check_size(self.url, value, self.max_bytes)
        life = ttl if ttl is not None else self.ttl
        if life is not None and life <= 0:  # expired at once: nothing to keep
            return value
        name = self.prefix + key
        px = max(1, round(life * 1000)) if life is not None else None
        if self._run("put", lambda: self._client.set(name, value, px=px, nx=True)):
            return value
        kept = self._run("get", lambda: self._client.get(name))  # None: it expired since
        return check_value(self.url, key, kept, "decode_responses is set in the URL?") or value

    def close(self) -> None:
        try:
            self._client.close()
        except self._errors as e:
            raise StoreError(
                f"{self.url}: close failed: {self._told(e)}",
                url=self.url,
                operation="close",
            ) from e

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def _told(self, error: BaseException) -> str:
        """What the driver said, without the URL's secrets."""
        return f"{type(error).__name__}: {scrub(str(error), self._secrets)}"

    def _run(self, operation: str, command: Callable[[], T]) -> T:
        try:
            return command()
        except self._errors as e:
            raise StoreError(
                f"{self.url}: {operation} failed: {self._told(e)}",
                url=self.url,
                operation=operation,
                refused=self._full(e),
            ) from e

    def _full(self, error: BaseException) -> bool:
        """Whether ``error`` is the server refusing a write for memory (``maxmemory``
        reached under ``noeviction``, or nothing it may evict): it still answers reads, so
        this is a refusal of that value, not the store being down. redis-py raises
        ``OutOfMemoryError`` (a ``ResponseError``) for the server's ``OOM`` reply; a client
        without that class, a bare ``ResponseError`` whose text starts ``OOM``."""
        if not isinstance(error, self._response_error):
            return False
        return type(error).__name__ == "OutOfMemoryError" or str(error).startswith("OOM ")
