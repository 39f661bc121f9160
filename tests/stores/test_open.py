"""``open_store`` picks the store by scheme and imports a driver only for its own kind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ctxwin
from ctxwin.stores import MemoryStore, open_store
from ctxwin.stores._base import SCHEMES
from ctxwin.stores.sqlite import SQLiteStore
from ctxwin.testing import agent_body


def test_each_scheme_opens_its_store(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    from ctxwin.stores.redis import RedisStore

    assert isinstance(open_store("memory"), MemoryStore)
    assert isinstance(open_store(f"sqlite:///{tmp_path}/a.db"), SQLiteStore)
    assert isinstance(open_store("redis://127.0.0.1:1/0"), RedisStore)
    assert isinstance(open_store("rediss://127.0.0.1:1/0"), RedisStore)


def test_the_options_reach_the_store(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/a.db", timeout=2.5, ttl=30, max_bytes=99)
    assert isinstance(store, SQLiteStore)
    assert (store.timeout, store.ttl, store.max_bytes) == (2.5, 30, 99)


def test_importing_the_stores_imports_no_driver() -> None:
    code = (
        "import sys, ctxwin, ctxwin.stores; "
        "print(sorted(m for m in ('redis', 'sqlite3') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_missing_redis_client_is_an_import_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[redis\]'") as e:
        open_store("redis://:pw@127.0.0.1:6379/0")
    assert "redis://:***@127.0.0.1:6379/0" in str(e.value)
    assert "pw@" not in str(e.value)
    with pytest.raises(ImportError, match=r"pip install 'ctxwin\[redis\]'"):
        ctxwin.load_policy({"store": "unix:///run/redis/redis.sock"})  # at load, not use


def test_a_redis_store_waits_at_most_its_timeout_and_never_retries() -> None:
    """The client as built: connect and read timeouts are the store's, zero retries."""
    pytest.importorskip("redis")
    from ctxwin.stores.redis import RedisStore

    store = RedisStore("redis://127.0.0.1:1/0", timeout=0.3)
    connection = store._client.connection_pool.make_connection()
    assert connection.socket_timeout == 0.3
    assert connection.socket_connect_timeout == 0.3
    assert connection.retry.get_retries() == 0
    assert store._client.get_retry().get_retries() == 0


def test_a_redis_url_parameter_the_client_does_not_take_is_a_store_error() -> None:
    """``?token=`` reached the client, which refused it as a bare TypeError at the first get,
    out of ``apply``: it is now refused when the store opens, and ``apply`` falls back."""
    pytest.importorskip("redis")
    url = "redis://127.0.0.1:1/0?token=abc"
    with pytest.raises(ctxwin.StoreError, match="does not take") as e:
        open_store(url)
    assert "abc" not in str(e.value)  # the token is a secret: masked
    policy = ctxwin.load_policy({"recall": True, "store": url, "tools": {"*": {"max_tokens": 30}}})
    result = policy.apply(agent_body([[("read", {}, "x " * 400)]]))
    assert any("does not take" in note for note in result.report.notes)


def test_the_policy_schema_names_every_scheme_a_store_url_may_have() -> None:
    """``rediss://`` and ``unix://`` opened, but the ``store`` and ``store.url``
    descriptions (what an editor shows from ``ctxwin schema``) named only the others."""
    schema = ctxwin.policy_json_schema()
    store = schema["anyOf"][0]["properties"]["store"]
    url = schema["$defs"]["StoreConfig"]["properties"]["url"]
    for description in (store["description"], url["description"]):
        assert [s for s in SCHEMES if (s if s == "memory" else f"{s}://") not in description] == []
