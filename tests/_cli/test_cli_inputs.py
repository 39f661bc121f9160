"""What the command line says about inputs a user gets wrong: each names where, none ends
the command with an exception from deep inside, and nothing is changed quietly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli.kit import cli, small_policy
from tests.builders import chat, coding_body

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return small_policy(tmp_path)


def deep_json(path: Path, depth: int = 5000) -> Path:
    """A request whose one message holds lists nested past what Python's decoder reads."""
    path.write_text(
        '{"messages":[{"role":"user","content":"hi","m":' + "[" * depth + "]" * depth + "}]}",
        encoding="utf-8",
    )
    return path


def test_json_nested_too_deep_to_decode_is_the_files_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = deep_json(tmp_path / "deep.json")
    code, out, err = cli(["check", path, "--format", "openai-chat"], capsys)
    assert (code, out) == (2, "")
    assert err == f"ctxwin: error: {path}: JSON nested more than 200 levels deep\n"


def test_jsonl_line_nested_too_deep_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(coding_body()) + "\n" + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = cli(["check", path], capsys)
    assert code == 2
    assert err == f"ctxwin: error: {path}:2: JSON nested more than 200 levels deep\n"


def test_replay_keep_going_skips_a_file_nested_too_deep(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--keep-going replays the other traces, as it does past invalid JSON (the exit status
    still says one was skipped)."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(coding_body()), encoding="utf-8")
    deep = deep_json(tmp_path / "deep.json")
    code, out, err = cli(["replay", good, deep, "-p", policy, "-k", "-j", "1"], capsys)
    assert code == 2
    assert f"ctxwin replay: skipped {deep}: JSON nested more than 200 levels deep" in err
    assert "1 trace (openai-chat)" in out


def test_apply_says_each_repair_it_made(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request is sent changed only with a line on stderr, as ``repair`` writes it."""
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(chat([[("bash", "ok"), ("bash", "ok too")]], missing=["call_2"])))
    code, out, err = cli(["apply", path, "-p", policy], capsys)
    assert code == 0
    assert json.loads(out)["messages"][4]["content"].startswith("tool result missing")
    assert err == (
        f"{path}: messages[2].tool_calls[1]: added_missing_result [call_2]: no result for this "
        "call: added an error result ('tool result missing: the call was interrupted')\n"
    )


def test_apply_says_what_the_report_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --report, a note is still said: here a model ``context_window: auto`` has no
    profile for (a policy whose recall store is down is noted the same way)."""
    folder = tmp_path / "auto"
    folder.mkdir()
    (folder / "defaults.yaml").write_text("context_window: auto\n", encoding="utf-8")
    path = tmp_path / "bodies.jsonl"  # said once, not for each request
    body = json.dumps({**coding_body(), "model": "no-such-model"})
    path.write_text(f"{body}\n{body}\n", encoding="utf-8")
    code, out, err = cli(["apply", path, "-p", folder], capsys)
    assert code == 0
    assert [json.loads(line)["model"] for line in out.splitlines()] == ["no-such-model"] * 2
    assert err == (
        f"ctxwin: warning: {path}:1: context_window: auto, but the model 'no-such-model' has no "
        "profile: 128,000 tokens assumed\n"
    )


def test_apply_of_a_valid_request_says_nothing(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(coding_body()), encoding="utf-8")
    code, _, err = cli(["apply", path, "-p", policy], capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("argv", "env", "origin"),
    [(["--store", "bogus://x"], None, "--store"), ([], "bogus://x", "$CTXWIN_STORE")],
)
def test_a_bad_store_url_names_where_it_came_from(
    tmp_path: Path,
    policy: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    env: str | None,
    origin: str,
) -> None:
    """Not the policy, which did not say it."""
    if env is not None:
        monkeypatch.setenv("CTXWIN_STORE", env)
    path = tmp_path / "body.json"
    path.write_text(json.dumps(coding_body()), encoding="utf-8")
    code, out, err = cli(["apply", path, "-p", policy, *argv], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"ctxwin: error: {origin}: unknown store 'bogus://x': use memory, sqlite:///path.db, "
        "redis://host:port/db (rediss:// for TLS, unix:///path/redis.sock for a socket)\n"
    )


def no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $HOME and a uid with no passwd entry (a container run as any uid): Path.home()
    raises, as it does there."""

    def home(cls: type[Path]) -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("HOME", "XDG_CACHE_HOME", "CTXWIN_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", classmethod(home))


@pytest.mark.parametrize("command", [["apply", "-o", "-"], ["report"]])
def test_a_policy_without_recall_runs_with_no_home_directory(
    tmp_path: Path,
    policy: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    """It never opens the store, so the default store's file is not looked for: the command
    failed with "unexpected RuntimeError: Could not determine home directory"."""
    path = tmp_path / "body.json"
    path.write_text(json.dumps(coding_body()), encoding="utf-8")
    no_home(monkeypatch)
    code, out, err = cli([command[0], path, "-p", policy, *command[1:]], capsys)
    assert (code, err) == (0, "")
    assert out


NO_HOME = (
    "ctxwin: error: no home directory for the default store (~/.cache/ctxwin/store.db): "
    "give --store, or set $CTXWIN_STORE, $XDG_CACHE_HOME or $HOME\n"
)


def test_recall_with_no_home_directory_says_what_to_set(
    tmp_path: Path,
    policy: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A policy that recalls, and ``ctxwin recall`` under any policy, need the store."""
    path = tmp_path / "body.json"
    path.write_text(json.dumps(coding_body()), encoding="utf-8")
    recalling = tmp_path / "recall.yaml"
    recalling.write_text(policy.read_text(encoding="utf-8") + "recall: true\n", encoding="utf-8")
    no_home(monkeypatch)
    assert cli(["apply", path, "-p", recalling], capsys) == (2, "", NO_HOME)
    assert cli(["recall", "r-000000000000", "-p", policy], capsys) == (2, "", NO_HOME)
    store = f"sqlite:///{tmp_path / 'x.db'}"
    code, _, err = cli(["apply", path, "-p", recalling, "--store", store], capsys)
    assert (code, err) == (0, "")


def test_repair_refuses_a_request_it_would_leave_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orphan.json"
    path.write_text('{"messages":[{"role":"tool","tool_call_id":"z","content":"x"}]}')
    code, out, err = cli(["repair", path, "--format", "openai-chat"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"ctxwin: error: {path}: messages: nothing is left after repair")


def test_check_fails_an_empty_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"messages": []}')
    code, out, _ = cli(["check", path, "--format", "openai-chat"], capsys)
    assert code == 1
    assert f"{path}: messages: error: empty_request: the request has no messages" in out


EXACT = (
    '{"lat":48.85661400000000000000001,"scale":1e400,"tiny":-2.5e-400,"half":0.5,'
    '"far":1e-99999999999999999999}'
)
"""Tool input numbers a float cannot hold exactly (25 digits, overflow, underflow; an
exponent past what Python's Decimal holds, which ended the command with an unexpected
InvalidOperation: review s50-6)."""


def inexact_body() -> str:
    return (
        '{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":'
        '"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"geo",'
        f'"input":{EXACT}}}]}},{{"role":"user","content":[{{"type":"tool_result",'
        '"tool_use_id":"t1","content":"ok"}]}]}'
    )


def strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("command", ["apply", "repair"])
@pytest.mark.parametrize("layout", [[], ["--compact"], ["jsonl"]])
def test_numbers_a_float_cannot_hold_are_written_as_they_came(
    tmp_path: Path,
    policy: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    layout: list[str],
) -> None:
    """``1e400`` was written ``Infinity`` (no JSON) and 25 digits as 17: in a part of the
    body no step touched. Read back, the output is strict JSON with the input's numbers."""
    jsonl = layout == ["jsonl"]
    path = tmp_path / ("r.jsonl" if jsonl else "r.json")
    path.write_text((inexact_body() + "\n") * (2 if jsonl else 1), encoding="utf-8")
    argv: list[str | Path] = [command, path, *([] if jsonl else layout)]
    code, out, err = cli([*argv, *(["-p", policy] if command == "apply" else [])], capsys)
    assert (code, err) == (0, "" if command == "apply" else "ctxwin repair: nothing to repair\n")
    bodies = [strict_json(line) for line in out.splitlines()] if jsonl else [strict_json(out)]
    assert bodies == [json.loads(inexact_body())] * len(bodies)
    compact = "".join(out.split())
    assert compact.count(EXACT) == len(bodies)


def test_report_and_replay_read_numbers_a_float_cannot_hold(
    tmp_path: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Worker processes get them too (a body is sent to them pickled)."""
    path = tmp_path / "r.json"
    path.write_text(inexact_body(), encoding="utf-8")
    assert cli(["report", path, "-p", policy], capsys)[0] == 0
    serial = cli(["replay", path, path, "-p", policy, "--json", "-j", "1"], capsys)
    assert serial[0] == 0
    assert cli(["replay", path, path, "-p", policy, "--json", "-j", "2"], capsys) == serial


def test_a_string_spelling_a_number_mark_is_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The numbers are written back through marks in the text: a string of the body that
    spells one is no mark."""
    body = inexact_body().replace('"content":"ok"', '"content":"ctxwin-number-0"')
    path = tmp_path / "r.json"
    path.write_text(body, encoding="utf-8")
    code, out, _ = cli(["repair", path, "--compact"], capsys)
    assert (code, out) == (0, body + "\n")
