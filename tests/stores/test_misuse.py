"""Stores misused: secrets in URLs never shown, and a ``store=`` argument checked as the
policy's ``store:`` key is."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxwin
from ctxwin import PolicyError, StoreError
from ctxwin.stores import MemoryStore, open_store
from ctxwin.stores._base import mask_url, scrub, secrets_of, url_problem
from ctxwin.stores.sqlite import sqlite_path
from ctxwin.testing import agent_body
from tests.stores.conftest import free_port

SECRETS = ("hunter2", "hunter3", "er2", "s3cr3t")


MASKED = [
    # a password holding '@': the userinfo ends at the LAST '@' before the host
    ("redis://:hunt@er2@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0"),
    ("redis://bob:a@b@c@h/0", "redis://bob:***@h/0"),
    # '/' typed in a password (a URL parser cuts the host short there)
    ("redis://:hun/ter2@h:1/0", "redis://:***@h:1/0"),
    # redis-py's query parameters, any case
    ("redis://h:1/0?password=hunter3", "redis://h:1/0?password=***"),
    ("redis://h:1/0?db=2&PassWord=hunter3", "redis://h:1/0?db=2&PassWord=***"),
    (
        "rediss://:hunter2@h:1/0?ssl=true&pass=a&pwd=b&secret=c&token=d&auth=e",
        "rediss://:***@h:1/0?ssl=true&pass=***&pwd=***&secret=***&token=***&auth=***",
    ),
    # a ';' is no separator: redis-py (parse_qs) reads the value up to the next '&' (s50-1)
    ("redis://h:1/0?password=Xy7;kP2qR8&db=1", "redis://h:1/0?password=***&db=1"),
    ("redis://h:1/0?db=1;password=hunter3", "redis://h:1/0?db=1;password=hunter3"),
    ("redis://h:1/0?pass%77ord=hunter3", "redis://h:1/0?pass%77ord=***"),
    # '?' typed in a password: the query does not start there (review s48-3)
    ("redis://:hunter?2@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0"),
    ("redis://app:s3cr?t@h:1/0?db=2&password=x", "redis://app:***@h:1/0?db=2&password=***"),
    # '/' and '?' both typed in a password, in either order (review s49-1)
    ("redis://:a/b?c@host:6379/0", "redis://:***@host:6379/0"),
    ("redis://:x?y/z@host:6379/0", "redis://:***@host:6379/0"),
    ("rediss://:a#b/c?d@h:1/0", "rediss://:***@h:1/0"),
    ("redis://user:1234?a=b@h:1/0", "redis://user:***@h:1/0"),  # 'user:1234' reads as a host
    ("unix://:pa/ss@/tmp/redis.sock?db=0", "unix://:***@/tmp/redis.sock?db=0"),
    # an '@' after a ':' is the end of a password wherever it is: 'h' may be a user name
    ("redis://h:6379/0?client_name=a@b", "redis://h:***@b"),
    # ... and an '@' in a query password may be either: masked under both readings (s49-8)
    ("redis://:pw@h:1/0?password=p@ss", "redis://:***"),
    ("redis://cache.local:6379/0?password=p4ss@w0rd&db=1", "redis://cache.local:***&db=1"),
    ("redis://u:pw@h:1/0?password=q@rstuvw", "redis://u:***"),
    ("unix://:pw@/tmp/a@b.sock", "unix://:***@b.sock"),
]
KEPT = [
    "memory",
    "sqlite:///cache/a@b:c.db",  # a path, not a userinfo
    "sqlite:////var/ctxwin.db?mode=ro",
    "redis://bob@h:6379/0",  # a user name alone is no secret
    "redis://h:6379/0?db=2&client_name=passer",
    "redis://h/0?client_name=a@b",  # an '@' in the query, no ':' before it: no password
    "unix:///tmp/a@b/redis.sock?db=0",  # a path, not a userinfo
    "sqlite:///x@y/a:b?c@d.db",
]


def test_every_secret_in_a_url_is_masked_and_nothing_else() -> None:
    assert [mask_url(url) for url, _ in MASKED] == [shown for _, shown in MASKED]
    assert [mask_url(url) for url in KEPT] == KEPT


def test_a_store_down_leaks_no_password_in_its_error_nor_in_the_report() -> None:
    pytest.importorskip("redis")
    port = free_port()  # nothing listens: every call fails at once
    url = f"redis://:hunt@er2@127.0.0.1:{port}/0?password=hunter3"
    policy = ctxwin.load_policy({"context_window": 8000, "recall": True}, store=url)
    lines = [[f"{i:4d} f{n}_{i} = {i}" for i in range(300)] for n in range(4)]
    reads = [[("read_file", {"path": f"f{n}.py"}, "\n".join(lines[n]))] for n in range(4)]
    result = policy.apply(agent_body(reads))
    shown = f"redis://:***@127.0.0.1:{port}/0?password=***"
    assert policy.shelf.url == shown
    assert result.report.notes
    text = "\n".join(result.report.notes) + result.report.to_text() + repr(result.report.to_dict())
    assert shown in text
    assert not [s for s in SECRETS if s in text]
    error = policy.recall_call({"handle": "r-000000000000"})
    assert error.is_error
    assert not [s for s in SECRETS if s in error.text]


@given(
    password=st.text(alphabet="ab1@:/?#=&;%", max_size=8),
    user=st.sampled_from(["", "bob"]),
    after=st.sampled_from(["h:6379/0", "[::1]:1/0?db=1", "/tmp/redis.sock?password=xyz"]),
)
def test_a_password_typed_with_any_characters_is_masked_whole(
    password: str, user: str, after: str
) -> None:
    """Whatever a password holds ('@', '?', '/', '#', ':', '='), it is masked whole, and
    the URL is refused when the driver would misread it."""
    url = f"{'unix' if after.startswith('/') else 'redis'}://{user}:{password}@{after}"
    assert mask_url(url) == url.replace(f":{password}@", ":***@").replace("xyz", "***")
    assert (url_problem(url) is None) == (not set("?#/") & set(password))


@given(
    password=st.text(alphabet="QZ;&=%+@", max_size=8),
    where=st.sampled_from(["redis://h/0?", "rediss://h/1?db=2&", "unix:///tmp/redis.sock?"]),
)
def test_a_query_password_is_masked_whole_as_redis_reads_it(password: str, where: str) -> None:
    """A query password runs to the next '&' (';' and '=' included), as redis-py reads it
    with parse_qs: that whole value is masked and listed among the URL's secrets (s50-1)."""
    url = f"{where}password={password}&db=1"
    typed = password.partition("&")[0]
    read = unquote_plus(typed)
    rest = password[len(typed) :]
    assert mask_url(url) == f"{where}password={'***' if typed else ''}{rest}&db=1"
    assert len(read) < 3 or read in secrets_of(url)
    try:
        from redis.connection import parse_url
    except ImportError:  # the driver is an extra: the reading above is parse_qs's
        return
    assert parse_url(url).get("password") == (read or None)


@pytest.mark.parametrize(
    ("url", "shown", "hint"),
    [
        ("redis://:s3cr3tpw#x@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0", "# as %23"),
        ("rediss://default:pa?ss@127.0.0.1:1/0", "rediss://default:***@127.0.0.1:1/0", "? as %3F"),
        ("redis://:hun/ter2@h:1/0", "redis://:***@h:1/0", "/ as %2F"),
        ("redis://:a/b?c@host:6379/0", "redis://:***@host:6379/0", "/ as %2F, ? as %3F"),
        ("redis://:x?y/z@host:6379/0", "redis://:***@host:6379/0", "/ as %2F, ? as %3F"),
        ("unix://:pa/ss@/tmp/redis.sock", "unix://:***@/tmp/redis.sock", "/ as %2F"),
        ("redis://h:6379/0?client_name=ab@b", "redis://h:***@b", "an '@' in the path or query"),
    ],
)
def test_a_password_the_driver_would_misread_is_refused_masked(
    url: str, shown: str, hint: str
) -> None:
    """A '#', '?' or '/' typed in a password ends the URL's host part there for redis-py:
    it read the port from the password and quoted a piece of it in its error ('pa'), or,
    for '/', took no host at all. The URL is refused before the driver sees it, masked,
    saying how to write it."""
    with pytest.raises(StoreError) as e:
        open_store(url)
    assert e.value.url == shown
    assert e.value.operation == "open"
    assert hint in str(e.value)
    secret = url.split("@")[0].rsplit(":", 1)[1]
    assert secret not in str(e.value)
    assert f"'{secret[:2]}'" not in str(e.value)
    with pytest.raises(ctxwin.PolicyError, match="percent-encode"):
        ctxwin.load_policy({"context_window": 8000}, store=url)


@pytest.mark.parametrize(
    "url",
    [
        "redis://h/0?password=p@ss",
        "redis://h:6379/0?password=p%40ss",
        "unix:///tmp/a@b/redis.sock?password=p@ss",
        "unix://:pw@/tmp/a%40b.sock",
    ],
)
def test_an_at_where_no_password_can_end_is_not_refused(url: str) -> None:
    """An '@' with no ':' before it (a query value, a socket's path) or percent-encoded ends
    no password: the URL opens as the driver reads it, its secrets masked."""
    pytest.importorskip("redis")
    assert url_problem(url) is None
    assert open_store(url).url == mask_url(url)
    assert "p@ss" not in mask_url(url)
    assert "pw" not in mask_url(url)


def test_a_bad_sqlite_url_is_shown_masked() -> None:
    with pytest.raises(StoreError) as e:
        sqlite_path("sqlite://user:hunter2@host/x.db")
    assert "hunter2" not in str(e.value)
    assert e.value.url == "sqlite://user:***@host/x.db"


# ----------------------------------------------------------------------- store=


@pytest.mark.parametrize(
    "url", ["http://x", "", "SQLITE:////x.db", "mongodb://h/db", "redis//h:1/0"]
)
def test_a_store_url_argument_is_refused_as_the_policy_key_refuses_it(url: str) -> None:
    with pytest.raises(PolicyError) as in_policy:
        ctxwin.load_policy({"store": url})
    with pytest.raises(PolicyError) as argument:
        ctxwin.load_policy({}, store=url)
    assert argument.value.reason == in_policy.value.reason
    assert argument.value.key == "store"
    assert str(argument.value) == f"<policy>: store: {in_policy.value.reason}"


def test_a_store_url_argument_is_refused_with_its_password_masked() -> None:
    with pytest.raises(PolicyError) as e:
        ctxwin.load_policy({}, store="redis+sentinel://:hunter2@h:1/0")
    assert "hunter2" not in str(e.value)
    assert "redis+sentinel://:***@h:1/0" in str(e.value)


@pytest.mark.parametrize(
    "given", [42, {}, b"memory", Path("x.db"), ["memory"]], ids=lambda g: type(g).__name__
)
def test_a_store_argument_is_a_url_or_a_store_object_and_nothing_else(
    given: object, tmp_path: Path
) -> None:
    with pytest.raises(PolicyError) as e:
        ctxwin.load_policy({}, store=given)  # type: ignore[arg-type]
    assert e.value.key == "store"
    assert e.value.reason == (
        "must be a store URL (memory, sqlite:///path.db, redis://host:port/db, rediss://, "
        "unix://) or a store "
        "object (with url, get, put and close: the ctxwin.stores.Store protocol), not "
        f"{type(given).__name__}"
    )
    store = MemoryStore()
    assert ctxwin.Policy({}, store=store).shelf.store() is store
    url = f"sqlite:///{tmp_path}/s.db"
    assert ctxwin.Policy({}, store=url).shelf.url == url


def test_a_store_class_in_place_of_a_store_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"not the class MemoryStore \(e.g. MemoryStore\(\)\)"):
        ctxwin.Policy({}, store=MemoryStore)  # type: ignore[arg-type]


def test_a_policys_store_of_no_known_scheme_masks_its_password() -> None:
    """A typo in the scheme is no reason to print the password (YAML ``store:``, ``--store``
    and ``$CTXWIN_STORE`` all go through the policy's key)."""
    with pytest.raises(ctxwin.PolicyError) as info:
        ctxwin.load_policy({"store": "redus://:hunter2@h/0"})
    assert "hunter2" not in str(info.value)
    assert info.value.reason == (
        "unknown store 'redus://:***@h/0': use memory, sqlite:///path.db, redis://host:port/db "
        "(rediss:// for TLS, unix:///path/redis.sock for a socket)"
    )


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"ttl": -1}, "ttl must be a positive number, not -1"),
        ({"ttl": 0}, "ttl must be a positive number, not 0"),
        ({"max_bytes": -5}, "max_bytes must be a positive number, not -5"),
        ({"timeout": float("nan")}, "timeout must be a positive number, not nan"),
        ({"timeout": "1"}, "timeout must be a positive number, not '1'"),
    ],
)
def test_open_store_refuses_limits_that_are_not_positive(
    limits: dict[str, object], said: str
) -> None:
    """As the policy's ``store:`` keys are refused; a negative ttl expired every entry."""
    with pytest.raises(StoreError) as info:
        open_store("memory", **limits)  # type: ignore[arg-type]
    assert str(info.value) == said
    assert info.value.operation == "open"


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"timeout": 1e10}, "timeout must be at most 86,400 seconds, not 10000000000.0"),
        ({"timeout": float("inf")}, "timeout must be at most 86,400 seconds, not inf"),
        (
            {"ttl": 10**15 + 1},
            "ttl must be at most 1,000,000,000,000,000 seconds, not 1000000000000001",
        ),
        ({"ttl": float("inf")}, "ttl must be at most 1,000,000,000,000,000 seconds, not inf"),
        ({"max_bytes": 1e300}, "max_bytes must be at most 1,000,000,000,000,000 bytes, not 1e+300"),
    ],
)
def test_open_store_refuses_limits_past_their_bounds(limits: dict[str, object], said: str) -> None:
    """As the policy's ``store:`` keys are refused (``MAX_SECONDS``, ``MAX_COUNT``)."""
    with pytest.raises(StoreError) as info:
        open_store("memory", **limits)  # type: ignore[arg-type]
    assert str(info.value) == said
    assert info.value.operation == "open"


def test_a_sqlite_store_with_a_timeout_python_cannot_wait_is_a_store_error(
    tmp_path: Path,
) -> None:
    """It raised a bare OverflowError (past ``threading.TIMEOUT_MAX``)."""
    with pytest.raises(StoreError, match=r"^timeout must be at most 86,400 seconds"):
        open_store(f"sqlite:///{tmp_path}/x.db", timeout=1e10)


def test_limits_at_their_bounds_are_taken(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/x.db", timeout=86_400, ttl=10**15)
    store.put("k", b"v")
    assert store.get("k") == b"v"


def test_a_store_built_directly_checks_its_limits_too(tmp_path: Path) -> None:
    """``SQLiteStore(url, timeout=1e10)`` passed to ``load_policy(store=...)`` raised a bare
    OverflowError at the first apply; ``MemoryStore(ttl=-1)`` expired every entry."""
    from ctxwin.stores.redis import RedisStore
    from ctxwin.stores.sqlite import SQLiteStore

    with pytest.raises(StoreError, match=r"^timeout must be at most 86,400 seconds"):
        SQLiteStore(f"sqlite:///{tmp_path}/x.db", timeout=1e10)
    with pytest.raises(StoreError, match=r"^ttl must be a positive number, not -1$"):
        MemoryStore(ttl=-1)
    with pytest.raises(StoreError, match=r"^max_total must be a positive number, not 0$"):
        MemoryStore(max_total=0)
    with pytest.raises(StoreError, match=r"^timeout must be at most 86,400 seconds"):
        RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=1e10)


def test_a_query_password_holding_a_semicolon_is_scrubbed_whole() -> None:
    """redis-py reads ``password=Xy7;kP2qR8`` whole (parse_qs splits at '&' only): a
    driver's message quoting it is scrubbed whole (review s50-1)."""
    url = "redis://127.0.0.1:1/0?password=Xy7;kP2qR8&db=1"
    assert secrets_of(url) == ["Xy7;kP2qR8"]
    assert scrub("invalid password Xy7;kP2qR8", secrets_of(url)) == "invalid password ***"


def test_a_query_password_holding_an_at_is_among_the_url_s_secrets() -> None:
    """A driver's message quoting the query password (read as the query, not as the end of
    a userinfo) is scrubbed too (review s49-8, finding 2)."""
    url = "redis://cache.local:6379/0?password=p4ss@w0rdXYZ&db=1"
    assert "p4ss@w0rdXYZ" in secrets_of(url)
    assert "w0rdXYZ" not in scrub(f"AUTH failed for p4ss@w0rdXYZ at {url}", secrets_of(url))
