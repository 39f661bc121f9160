"""``ctxwin schema`` (for editors and CI) takes what loading takes: every policy file of the
repository, the documented ones, and the shorthands (``recall: true``, ``store: URL``,
``server_state: yes``), and refuses what loading refuses of them."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import jsonschema  # a dev dependency
import pytest
import yaml

import ctxwin

REPO = Path(__file__).resolve().parents[2]
SCHEMA = ctxwin.policy_json_schema()


def schema_takes(data: object) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(data)


def loader_takes(data: dict[str, Any]) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ctxwin.PolicyWarning)
            ctxwin.load_policy(data)
    except ctxwin.PolicyError:
        return False
    return True


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def policy_files() -> list[Path]:
    files = sorted(REPO.glob("policies/*/*.yaml")) + sorted(REPO.glob("examples/**/*.yaml"))
    assert len(files) >= 10
    return files


@pytest.mark.parametrize("path", policy_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_policy_file_of_the_repository_is_valid(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]
    assert errors == []


def documented_blocks() -> list[str]:
    """The YAML blocks of the docs that are policy files (``# defaults.yaml``,
    ``# examples/policy/search_code.yaml``; not LiteLLM's ``# config.yaml``)."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    found = [
        block
        for doc in docs
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
        if not block.startswith("# config.yaml")
    ]
    assert len(found) >= 3
    return found


@pytest.mark.parametrize("text", documented_blocks())
def test_every_documented_policy_file_is_valid(text: str) -> None:
    assert schema_takes(yaml.safe_load(text))


SHORTHANDS = [
    "recall: true",
    "recall: false",
    "recall: {enabled: true, max_tokens: 2000}",
    "store: memory",
    "store: sqlite:///tmp/ctxwin.db",
    "store: redis://localhost:6379/0",
    "store: rediss://cache.example:6380/1",
    "store: unix:///run/redis.sock?db=0",
    "store: 'unix://:pw@/run/redis.sock'",
    "store: {url: 'sqlite:///tmp/x.db', ttl: 3600}",
    "store: 'sqlite:////var/ctxwin.db?mode=rw'",
    "store: redis://",  # redis-py's defaults: localhost:6379, db 0
    "store: memory://",
    "server_state: yes",  # YAML reads it as true
    "server_state: no",
    "server_state: on",
    "server_state: 'yes'",
    "server_state: auto",
    "context_window: auto",
    "pricing: anthropic",
    "pricing: {cache_write: 1.25, cache_read: 0.1}",
    "repair: {first_user: ' (hi) ', missing_result: '{tool} was declined'}",
    "recall: {enabled: true, note: '(recall {handle} for the rest)'}",
]
REFUSED = [
    "recall: 'yes'",
    "recall: 1",
    "recall: null",
    "store: ftp://host/x",
    "store: {url: 'ftp://host/x'}",
    "store: memoryless",
    "store: ''",
    "store: 3",
    "store: true",
    # a scheme without what its store needs: each request noted the failure and fell back
    "store: sqlite",
    "store: 'sqlite://'",
    "store: 'sqlite:///'",
    "store: 'sqlite:///?mode=ro'",
    "store: sqlite://relative.db",
    "store: redis",
    "store: rediss",
    "store: unix",
    "store: 'unix://'",
    "store: 'unix:///'",
    "store: 'unix://:pw@'",
    "store: 'unix://redis.sock'",
    "store: 'unix://tmp/redis.sock?db=0'",
    "store: 'unix://localhost/tmp/redis.sock'",
    "store: {url: sqlite}",
    "server_state: maybe",
    "server_state: 1",
    "server_state: null",
    # repair writes each text as a message or result of its own: providers refuse blank ones
    "repair: {first_user: ''}",
    "repair: {last_user: '   '}",
    'repair: {missing_result: "\\n\\t"}',
    "repair: {empty_result: ' '}",
    # the note is what tells the agent which original to recall
    "recall: {enabled: true, note: 'Use the recall tool for the rest.'}",
]


@pytest.mark.parametrize("text", SHORTHANDS + REFUSED)
def test_the_schema_takes_a_value_exactly_when_loading_does(text: str) -> None:
    """The schema refused the shorthands the loader reads (``recall: true`` was "not of
    type 'object'")."""
    data = yaml.safe_load(text)
    taken = text in SHORTHANDS
    assert loader_takes(data) is taken
    assert schema_takes(data) is taken
