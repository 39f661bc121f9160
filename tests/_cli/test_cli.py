"""The ``ctxwin`` command line: each command as a subprocess (happy path and bad input), and
the finer cases through ``main(argv)`` in process.

Exit status: 0 success, 1 problems found, 2 bad usage or unreadable input; an error is one
line on stderr naming the file and the place in it.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin._cli import io as _cli_io
from ctxwin._cli import main
from tests._cli.kit import cli
from tests.builders import SMALL_POLICY_YAML, chat, coding_body, long_output

ROOT = Path(__file__).resolve().parents[2]
INVALID_JSON = '{"messages": [\n  {"role": "user" "content": "x"}]}'
FORMATS_LINE = "openai-chat, anthropic, openai-responses, gemini"


def run(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m ctxwin ARGS`` from the repository root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    return subprocess.run(
        [sys.executable, "-m", "ctxwin", *map(str, args)],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )


def write_json(path: Path, body: object) -> Path:
    path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    broken = chat([[("bash", "ok"), ("bash", "ok too")]], missing=["call_2"])
    out = {
        "body": write_json(d / "body.json", coding_body()),
        "broken": write_json(d / "broken.json", broken),
        "empty_result": write_json(d / "empty_result.json", chat([[("bash", "")]])),
        "policy": d / "policy.yaml",
        "bad_policy": d / "bad_policy.yaml",
        "invalid": d / "invalid.json",
        "empty": d / "empty.json",
        "jsonl": d / "requests.jsonl",
    }
    out["policy"].write_text(SMALL_POLICY_YAML, encoding="utf-8")
    out["bad_policy"].write_text("context_window: -5\n", encoding="utf-8")
    out["invalid"].write_text(INVALID_JSON, encoding="utf-8")
    out["empty"].write_text("", encoding="utf-8")
    lines = [json.dumps(coding_body()), "", json.dumps(broken)]
    out["jsonl"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# ============================================================================ subprocesses


def test_apply_writes_the_edited_request(files: dict[str, Path]) -> None:
    r = run("apply", files["body"], "--policy", files["policy"])
    assert (r.returncode, r.stderr) == (0, "")
    out = json.loads(r.stdout)
    expected = ctxwin.load_policy(files["policy"]).apply(coding_body()).request
    assert out == expected
    assert len(out["messages"][3]["content"]) < len(coding_body()["messages"][3]["content"])


def test_apply_reads_stdin_and_writes_the_output_file(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    r = run("apply", "-", "-p", files["policy"], "-o", out, stdin=files["body"].read_text())
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert json.loads(out.read_text(encoding="utf-8"))["model"] == "gpt-4o"


def test_apply_missing_file(files: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    r = run("apply", missing, "-p", files["policy"])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"ctxwin: error: {missing}: no such file or folder\n"


def test_apply_invalid_json_names_line_and_column(files: dict[str, Path]) -> None:
    r = run("apply", files["invalid"], "-p", files["policy"])
    assert r.returncode == 2
    assert (
        r.stderr
        == f"ctxwin: error: {files['invalid']}:2:19: invalid JSON: Expecting ',' delimiter\n"
    )


def test_apply_unknown_format(files: dict[str, Path]) -> None:
    r = run("apply", files["body"], "-p", files["policy"], "--format", "nope")
    assert r.returncode == 2
    assert r.stderr == (
        f"ctxwin apply: error: argument --format: unknown format 'nope'; expected one of: "
        f"{FORMATS_LINE} (see 'ctxwin apply --help')\n"
    )


def test_apply_invalid_policy(files: dict[str, Path]) -> None:
    r = run("apply", files["body"], "-p", files["bad_policy"])
    assert r.returncode == 2
    assert r.stderr == (
        f"ctxwin: error: {files['bad_policy']}:1: context_window: must be greater than 0 (got -5)\n"
    )


def test_apply_empty_file(files: dict[str, Path]) -> None:
    r = run("apply", files["empty"], "-p", files["policy"])
    assert r.returncode == 2
    assert r.stderr == f"ctxwin: error: {files['empty']}: empty input (no request)\n"


def test_apply_empty_stdin(files: dict[str, Path]) -> None:
    r = run("apply", "-", "-p", files["policy"], stdin="  \n")
    assert r.returncode == 2
    assert r.stderr == "ctxwin: error: <stdin>: empty input (no request)\n"


def test_report_text_fits_100_columns(files: dict[str, Path]) -> None:
    r = run("report", files["body"], "--policy", files["policy"])
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith(f"ctxwin report: {files['body']}\n")
    assert "o200k_base (exact)" in r.stdout
    assert all(len(line) <= 100 for line in r.stdout.splitlines())


def test_report_json_per_file_and_total(files: dict[str, Path]) -> None:
    r = run("report", files["body"], files["jsonl"], "-p", files["policy"], "--json")
    assert (r.returncode, r.stderr) == (0, "")
    data = json.loads(r.stdout)
    assert data["version"] == 1
    names = [item["name"] for item in data["requests"]]
    assert names == [str(files["body"]), f"{files['jsonl']}:1", f"{files['jsonl']}:3"]
    before = sum(item["report"]["tokens"]["before"] for item in data["requests"])
    assert data["total"]["tokens"]["before"] == before
    assert data["requests"][2]["report"]["fixes"][0]["code"] == "added_missing_result"


def test_report_markdown(files: dict[str, Path]) -> None:
    r = run("report", files["body"], "-p", files["policy"], "--markdown")
    assert r.returncode == 0
    assert r.stdout.startswith(f"### {files['body']}\n")
    assert "| tool | calls | before | after | saved | share |" in r.stdout


def test_report_json_and_markdown_exclude_each_other(files: dict[str, Path]) -> None:
    r = run("report", files["body"], "-p", files["policy"], "--json", "--markdown")
    assert r.returncode == 2
    assert r.stderr == (
        "ctxwin report: error: argument --markdown: not allowed with argument --json "
        "(see 'ctxwin report --help')\n"
    )


def test_check_clean_request(files: dict[str, Path]) -> None:
    r = run("check", files["body"])
    assert (r.returncode, r.stdout, r.stderr) == (0, "checked 1 request: no problems\n", "")


def test_check_lists_problems_with_locations_and_exits_1(files: dict[str, Path]) -> None:
    r = run("check", files["broken"], files["jsonl"])
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        f"{files['broken']}: messages[2].tool_calls[1]: error: missing_result [call_2]: "
    )
    assert lines[1].startswith(f"{files['jsonl']}:3: messages[2].tool_calls[1]: error: ")
    assert lines[2] == "checked 3 requests: 2 errors, 0 warnings"


def test_check_warnings_alone_exit_0(files: dict[str, Path]) -> None:
    r = run("check", files["empty_result"])
    assert r.returncode == 0
    assert ": warning: empty_result [call_1]: " in r.stdout
    assert r.stdout.endswith("checked 1 request: 0 errors, 1 warning\n")


def test_check_invalid_jsonl_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(coding_body()) + "\n{oops}\n", encoding="utf-8")
    r = run("check", bad)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (
        f"ctxwin: error: {bad}:2:2: invalid JSON: Expecting property name enclosed in "
        "double quotes\n"
    )


def test_repair_writes_a_valid_request_and_lists_fixes(files: dict[str, Path]) -> None:
    r = run("repair", files["broken"])
    assert r.returncode == 0
    assert r.stderr == (
        f"{files['broken']}: messages[2].tool_calls[1]: added_missing_result [call_2]: no "
        "result for this call: added an error result ('tool result missing: the call was "
        "interrupted')\nctxwin repair: 1 fix\n"
    )
    assert ctxwin.check(json.loads(r.stdout)) == []


def test_repair_strict_refuses_and_writes_nothing(files: dict[str, Path]) -> None:
    r = run("repair", files["broken"], "--strict")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.endswith("ctxwin repair: 1 pairing problem (--strict: nothing written)\n")


def test_server_state_keeps_results_whose_calls_live_on_the_server(tmp_path: Path) -> None:
    chained = tmp_path / "chained.json"
    items = [
        {"role": "user", "content": "and the tests?"},
        {"type": "function_call_output", "call_id": "call_prev", "output": "3 failed"},
    ]
    chained.write_text(json.dumps({"input": items}), encoding="utf-8")
    r = run("check", chained)
    assert r.returncode == 1
    assert ": orphan_result [call_prev]: " in r.stdout
    r = run("check", chained, "--server-state")
    assert (r.returncode, r.stdout) == (0, "checked 1 request: no problems\n")
    r = run("repair", chained, "--server-state")
    assert (r.returncode, json.loads(r.stdout)) == (0, {"input": items})
    assert r.stderr == "ctxwin repair: nothing to repair\n"


def test_lint_valid_policy(files: dict[str, Path]) -> None:
    r = run("lint", files["policy"])
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (
        f"{files['policy']}: ok (1 file, 1 tool rule, context window 4,000, tokenizer o200k_base)\n"
    )


def test_lint_lists_every_error_as_file_line_message(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("context_window: -5\nwindw: {}\n", encoding="utf-8")
    (tmp_path / "grep.yaml").write_text('tool: grep\nselect: "foo[?"\n', encoding="utf-8")
    r = run("lint", tmp_path)
    assert r.returncode == 1
    d, g = tmp_path / "defaults.yaml", tmp_path / "grep.yaml"
    lines = r.stdout.splitlines()
    assert lines[0] == f"{d}:1: context_window: must be greater than 0 (got -5)"
    # (the list of allowed keys is the policy module's to say)
    assert lines[1].startswith(f"{d}:2: windw: unknown key 'windw' (expected one of: ")
    assert lines[2:] == [
        f"{g}:2: select: invalid JMESPath at column 6: incomplete expression",
        "    foo[?",
        "         ^",
    ]
    assert r.stderr == f"ctxwin lint: 3 errors in {tmp_path}\n"


def test_lint_shows_a_deprecated_jmespath_literal_with_its_caret(tmp_path: Path) -> None:
    path = tmp_path / "grep.yaml"
    path.write_text("tool: grep\nselect: 'm[?k==`v`]'\n", encoding="utf-8")
    r = run("lint", path)
    assert r.returncode == 0  # it works: a warning, not an error
    assert r.stdout.startswith(f"{path}: ok (1 file")
    assert r.stderr == (
        f"ctxwin: warning: {path}:2: select: deprecated JMESPath literal at column 7: write "
        "the string 'v' in single quotes ('...') or as JSON (`\"...\"`)\n"
        "    m[?k==`v`]\n"
        "          ^\n"
    )


def test_lint_missing_policy(tmp_path: Path) -> None:
    r = run("lint", tmp_path / "nope")
    assert r.returncode == 2
    assert r.stderr == f"ctxwin: error: {tmp_path / 'nope'}: no such file or folder\n"


def test_lint_of_a_name_too_long_for_the_file_system(tmp_path: Path) -> None:
    """It printed 'unexpected OSError'."""
    r = run("lint", "p" * 300)
    assert r.returncode == 2
    assert r.stderr == f"ctxwin: error: {'p' * 300}: cannot read: File name too long\n"


def test_schema_is_the_policy_json_schema() -> None:
    r = run("schema")
    assert (r.returncode, r.stderr) == (0, "")
    assert json.loads(r.stdout) == ctxwin.policy_json_schema()


def test_replay_text_and_json(files: dict[str, Path]) -> None:
    r = run("replay", files["body"], files["broken"], "-p", files["policy"])
    assert (r.returncode, r.stderr) == (0, "")
    assert re.search(r"^total \(2 traces\)\s+unmanaged\s", r.stdout, re.MULTILINE)
    assert all(len(line) <= 100 for line in r.stdout.splitlines())
    r = run("replay", files["body"], "-p", files["policy"], "--json")
    data = json.loads(r.stdout)
    assert data["traces"][0]["trace"] == str(files["body"])
    assert data["total"]["managed"]["problems"] == 0
    assert data["total"]["cost_ratio"] < 1


def test_no_command_is_one_usage_line() -> None:
    r = run()
    assert r.returncode == 2
    assert r.stderr == (
        "ctxwin: error: the following arguments are required: COMMAND (see 'ctxwin --help')\n"
    )


def test_debug_shows_the_traceback(files: dict[str, Path]) -> None:
    r = run("check", files["invalid"], "--debug")
    assert r.returncode == 2
    assert "Traceback (most recent call last)" in r.stderr
    assert "json.decoder.JSONDecodeError: Expecting ',' delimiter" in r.stderr
    assert r.stderr.endswith(
        f"ctxwin: error: {files['invalid']}:2:19: invalid JSON: Expecting ',' delimiter\n"
    )


# ============================================================================ in process


def test_help_lists_the_commands_and_check_explains_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli(["--help"], capsys)
    assert code == 0
    for command in ("apply", "report", "check", "repair", "lint", "schema", "replay"):
        assert f"    {command} " in out
    code, out, _ = cli(["check", "--help"], capsys)
    assert code == 0
    assert "warnings, such as empty results, are printed but do not fail" in " ".join(out.split())


def test_format_error_names_the_json_path(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(
        ["apply", files["body"], "-p", files["policy"], "--format", "anthropic"], capsys
    )
    assert (code, out) == (2, "")
    assert err == (
        f"ctxwin: error: {files['body']}: messages[2].content: 'content' must be a string or a "
        "list of blocks, not null\n"
    )


def test_undetectable_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_json(tmp_path / "x.json", {"foo": 1})
    code, _, err = cli(["check", path], capsys)
    assert code == 2
    assert err == (
        f"ctxwin: error: {path}: cannot tell the wire format of this JSON object: the object has "
        "keys "
        "['foo']; expected a JSON object with 'messages', 'input' or 'contents', or a list of "
        "messages\n"
    )


def test_ambiguous_format_points_to_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path / "x.json", [{"role": "user", "content": "hi"}])
    assert cli(["check", path], capsys) == (
        2,
        "",
        f"ctxwin: error: {path}: the wire format is ambiguous: the body could be openai-chat "
        "or anthropic or openai-responses; pass --format openai-chat (or another) to say which\n",
    )
    assert cli(["check", path, "--format", "anthropic"], capsys)[0] == 0


def test_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"a": "\xe9"}')
    assert cli(["check", path], capsys)[2] == (
        f"ctxwin: error: {path}: not UTF-8 text (invalid byte at offset 7)\n"
    )


def test_apply_a_folder_is_an_error(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(["apply", tmp_path, "-p", files["policy"]], capsys)
    assert (code, err) == (2, f"ctxwin: error: {tmp_path}: is a folder, not a request file\n")


def test_unwritable_output(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no" / "such" / "dir.json"
    code, _, err = cli(["apply", files["body"], "-p", files["policy"], "-o", out], capsys)
    assert (code, err) == (2, f"ctxwin: error: {out}: cannot write: No such file or directory\n")


def test_missing_policy(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(["report", files["body"], "-p", tmp_path / "nope"], capsys)
    assert (code, err) == (2, f"ctxwin: error: {tmp_path / 'nope'}: no such file or folder\n")


def test_several_policy_errors_show_the_first_and_point_to_lint(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pol = tmp_path / "p.yaml"
    pol.write_text("context_window: -5\noverflow: never\n", encoding="utf-8")
    code, _, err = cli(["apply", files["body"], "-p", pol], capsys)
    assert code == 2
    assert err == (
        f"ctxwin: error: {pol}:1: context_window: must be greater than 0 (got -5) "
        f"(and 1 more error; 'ctxwin lint {pol}' lists them)\n"
    )


def test_empty_folder(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("not a request", encoding="utf-8")
    code, _, err = cli(["report", tmp_path, "-p", files["policy"]], capsys)
    assert (code, err) == (
        2,
        f"ctxwin: error: {tmp_path}: no .json or .jsonl files in this folder\n",
    )


def test_folders_are_read_recursively_skipping_hidden_files(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_json(tmp_path / "a.json", coding_body())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text(files["jsonl"].read_text(), encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.json").write_text("not json", encoding="utf-8")
    code, out, _ = cli(["report", tmp_path, "-p", files["policy"], "--json"], capsys)
    assert code == 0
    names = [item["name"] for item in json.loads(out)["requests"]]
    sub = tmp_path / "sub" / "b.jsonl"
    assert names == [str(tmp_path / "a.json"), f"{sub}:1", f"{sub}:3"]


def test_request_files_are_found_whatever_the_case_of_their_extension(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As policy folders take ``.YAML``: a ``B.JSON`` was skipped without a word, and a
    ``C.JSONL`` named alone was read as one JSON document."""
    write_json(tmp_path / "B.JSON", coding_body())
    (tmp_path / "C.JSONL").write_text(files["jsonl"].read_text(), encoding="utf-8")
    code, out, _ = cli(["report", tmp_path, "-p", files["policy"], "--json"], capsys)
    assert code == 0
    names = [item["name"] for item in json.loads(out)["requests"]]
    jsonl = tmp_path / "C.JSONL"
    assert names == [str(tmp_path / "B.JSON"), f"{jsonl}:1", f"{jsonl}:3"]
    code, out, _ = cli(["report", jsonl, "-p", files["policy"], "--json"], capsys)
    assert code == 0
    assert len(json.loads(out)["requests"]) == 2


def test_report_of_several_files_has_per_file_rows_and_total(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(["report", files["body"], files["jsonl"], "-p", files["policy"]], capsys)
    assert code == 0
    assert "total (3)" in out
    assert f"files in {files['body'].parent}/\n" in out
    assert re.search(r"^requests\.jsonl:3\s+openai-chat\s+5->6\s", out, re.MULTILINE)
    assert "tools over all requests:" in out


def test_stdin_jsonl_gives_jsonl(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(files["jsonl"].read_text()))
    code, out, _ = cli(["apply", "-", "-p", files["policy"]], capsys)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert [json.loads(line)["model"] for line in lines] == ["gpt-4o", "gpt-4o"]


def test_apply_over_budget_under_overflow_error_exits_1(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pol = tmp_path / "tight.yaml"
    pol.write_text("context_window: 200\noverflow: error\n", encoding="utf-8")
    code, out, err = cli(["apply", files["body"], "-p", pol], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"ctxwin: error: {files['body']}: request is ")
    assert err.endswith(
        " tokens after the policy ran, over the context window of 200 tokens (overflow: error)\n"
    )
    code, out, _ = cli(["report", files["body"], "-p", pol], capsys)
    assert code == 0
    assert "over budget     YES" in out


def test_apply_report_prints_the_report_on_stderr(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(["apply", files["body"], "-p", files["policy"], "--report"], capsys)
    assert code == 0
    assert json.loads(out)["model"] == "gpt-4o"
    assert err.startswith(f"ctxwin report: {files['body']}\n")


def test_verbose_logs_each_edit(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(["apply", files["body"], "-p", files["policy"], "-v", "--compact"], capsys)
    assert code == 0
    lines = err.splitlines()
    assert lines[0].startswith("ctxwin cap bash call_1: ")
    assert lines[1].startswith("ctxwin cap read_file call_2: ")


def test_summarize_rules_warn_that_the_cli_has_no_summarizer(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pol = tmp_path / "summ.yaml"
    pol.write_text(
        'tools:\n  "*":\n    max_tokens: 50\n    summarize: {over_tokens: 40, max_tokens: 30}\n',
        encoding="utf-8",
    )
    code, _, err = cli(["apply", files["body"], "-p", pol, "--compact"], capsys)
    assert code == 0
    assert err == (
        f"ctxwin: warning: {pol}: summarize rules are not run (the command line has no "
        "summarizer): results over over_tokens are capped instead, at the tool's max_tokens, "
        "else summarize.max_tokens\n"
    )


def test_counter_fallback_warning_is_one_line(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ctxwin._cli import commands as _cli_commands

    real = _cli_commands.load_policy

    def load(*args: Any, **kwargs: Any) -> ctxwin.Policy:
        warnings.warn(
            "tiktoken encoding 'o200k_base' cannot be loaded offline; counting with "
            "cl100k_base\n(more detail)",
            ctxwin.CounterFallbackWarning,
            stacklevel=2,
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(_cli_commands, "load_policy", load)
    code, _, err = cli(["report", files["body"], "-p", files["policy"]], capsys)
    assert code == 0
    assert err == (
        "ctxwin: warning: tiktoken encoding 'o200k_base' cannot be loaded offline; counting "
        "with cl100k_base\n"
    )


def test_unexpected_errors_are_one_line_unless_debug(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ctxwin._cli import commands as _cli_commands

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_cli_commands, "check", boom)
    line = (
        f"ctxwin: error: {files['body']}: unexpected RuntimeError: boom (run with --debug for "
        "the traceback)\n"
    )
    assert cli(["check", files["body"]], capsys) == (2, "", line)
    code, _, err = cli(["check", files["body"], "--debug"], capsys)
    assert code == 2
    assert "Traceback (most recent call last)" in err
    assert "RuntimeError: boom" in err
    assert err.endswith(line)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_cli_io, "PROGRESS_DELAY", 0.0)
    args = ["check", files["body"], files["broken"], files["jsonl"]]
    _, _, err = cli(args, capsys)  # stderr is not a terminal here
    assert "\r" not in err
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([str(a) for a in args]) == 1
    drawn = terminal.getvalue()
    assert "ctxwin check [" in drawn
    assert "] 3/3 " in drawn
    assert drawn.endswith("\r")  # erased when done
    monkeypatch.setattr(sys, "stderr", terminal := FakeTerminal())
    main([str(a) for a in [*args, "--no-progress"]])
    assert terminal.getvalue() == ""


def test_check_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check", files["broken"], files["empty_result"], "--json"], capsys)
    assert code == 1
    data = json.loads(out)
    assert (data["version"], data["errors"], data["warnings"]) == (1, 1, 1)
    assert data["requests"][0]["problems"][0]["path"] == "messages[2].tool_calls[1]"


def test_report_max_edits_collapses(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    body = write_json(
        tmp_path / "long.json", chat([[("bash", long_output(30, f"t{k}"))] for k in range(12)])
    )
    code, out, _ = cli(["report", body, "-p", files["policy"], "--max-edits", "3"], capsys)
    assert code == 0
    assert "... and 9 more edits (" in out


@pytest.mark.parametrize("markdown", [[], ["--markdown"]])
def test_report_detail_of_several_requests_keeps_max_edits(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str], markdown: list[str]
) -> None:
    """--detail appended each request's report with the default 20 edits, not --max-edits."""
    body = chat([[("bash", long_output(30, f"t{k}"))] for k in range(12)])
    a, b = write_json(tmp_path / "a.json", body), write_json(tmp_path / "b.json", body)
    args = ["report", a, b, "-p", files["policy"], "--detail", "--max-edits", "3", *markdown]
    code, out, _ = cli(args, capsys)
    assert code == 0
    assert out.count("and 9 more edits (") == 2  # Markdown: "_… and 9 more edits"


def test_the_library_never_imports_the_cli() -> None:
    package = ROOT / "ctxwin"
    for path in package.rglob("*.py"):
        if "_cli" in path.relative_to(package).parts or path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            assert not any("_cli" in n for n in names), f"{path} imports the CLI"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_stdout_is_a_clean_cannot_write() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ctxwin", "schema"],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.startswith("ctxwin: error: <stdout>: cannot write: No space left on device")


def run_closed(redirect: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m ctxwin ARGS`` with a standard stream closed by the shell (``<&-``,
    ``>&-``, ``2>&-``): Python gives the command None for it, not a file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m ctxwin "$@" {redirect}', sys.executable, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_a_closed_stdin_or_stdout_is_said_in_one_line(files: dict[str, Path]) -> None:
    """``ctxwin check - <&-`` (a cron job, a service with no stdin) ended on "unexpected
    AttributeError: 'NoneType' object has no attribute 'read'", and ``>&-`` on 'write'."""
    done = run_closed("<&-", "check", "-")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "ctxwin: error: <stdin>: cannot read: stdin is closed\n"
    done = run_closed(">&-", "check", files["body"])
    assert (done.returncode, done.stderr) == (
        2,
        "ctxwin: error: <stdout>: cannot write: stdout is closed\n",
    )


def test_a_closed_stderr_leaves_the_exit_status_as_it_is(files: dict[str, Path]) -> None:
    """With stderr closed, the error line raised again as it was written: exit status 1
    (Python's, for an uncaught exception), not the command's."""
    assert run_closed("2>&-", "check", files["invalid"]).returncode == 2
    assert run_closed("2>&-", "check", files["broken"]).returncode == 1
    args = ("replay", files["body"], files["body"], "-p", files["policy"], "--progress")
    assert run_closed("2>&-", *args).returncode == 0


def test_a_lone_surrogate_in_a_request_is_written_back_escaped(tmp_path: Path) -> None:
    """JSON may escape a lone surrogate; UTF-8 cannot carry it, so it goes out escaped."""
    body = chat([[("bash", "ok")]], missing=["call_1"])
    body["messages"][1]["content"] = "odd \ud800 text"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(body), encoding="utf-8")  # ensure_ascii: the escape \\ud800
    done = run("repair", path)
    assert done.returncode == 0, done.stderr
    assert "\\ud800" in done.stdout
    assert json.loads(done.stdout)["messages"][1]["content"] == "odd \ud800 text"


def test_replay_prices_with_a_preset_and_prints_the_optimum(files: dict[str, Path]) -> None:
    r = run("replay", files["body"], "-p", files["policy"], "--pricing", "openai-4o", "--optimum")
    assert (r.returncode, r.stderr) == (0, "")
    assert "eff. cost = 1 x uncached + 0.5 x cached input tokens" in r.stdout
    assert re.search(r"^\s+x optimum\s+\d+\.\d+x", r.stdout, re.MULTILINE)
    r = run("replay", files["body"], "-p", files["policy"], "--pricing", "bogus")
    assert r.returncode == 2
    assert "--pricing 'bogus': no such preset; known: anthropic," in r.stderr


def test_tune_prints_a_yaml_diff_and_both_parts(tmp_path: Path) -> None:
    from ctxwin.testing import agent_body

    for i in range(4):  # four conversations (one a prefix of another would be one)
        rounds = [[("read", {}, "w " * 200)] for _ in range(12 + 3 * i)]
        write_json(tmp_path / f"t{i}.json", agent_body(rounds, task=f"task {i}"))
    policy = tmp_path / "p.yaml"
    policy.write_text("context_window: 4000\ntools:\n  '*': {max_tokens: 8000}\n", "utf-8")
    r = run("tune", tmp_path, "-p", policy, "--holdout", "0.25")
    assert (r.returncode, r.stderr) == (0, "")
    assert "on 3 training traces; 1 held out" in r.stdout
    assert "held-out traces (never searched on):" in r.stdout
    r = run("tune", tmp_path, "-p", policy, "--holdout", "1.5")
    assert r.returncode == 2
    assert "argument --holdout: must be at least 0 and below 1, not 1.5" in r.stderr


def test_tune_names_a_trace_it_cannot_replay_and_skips_it_when_told(tmp_path: Path) -> None:
    from ctxwin.testing import agent_body

    for i in range(3):
        body = agent_body([[("read", {}, "w " * 200)] for _ in range(10 + 3 * i)], task="go")
        write_json(tmp_path / f"t{i}.json", body)
    orphan = tmp_path / "t3.json"  # a result whose call is not in the request
    write_json(orphan, {"messages": [{"role": "tool", "tool_call_id": "gone", "content": "x"}]})
    policy = tmp_path / "p.yaml"
    policy.write_text("context_window: 4000\n", "utf-8")
    r = run("tune", tmp_path, "-p", policy, "--holdout", "0")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"ctxwin: error: {orphan}: ")
    r = run("tune", tmp_path, "-p", policy, "--holdout", "0", "--keep-going")
    assert r.returncode == 2
    assert "on 3 training traces; 0 held out" in r.stdout
    assert r.stderr.startswith(f"ctxwin tune: skipped {orphan}: ")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "command",
    [
        ["apply", "body", "-p", "policy"],
        ["report", "body", "-p", "policy"],
        ["check", "broken"],
        ["repair", "broken"],
        ["lint", "policy"],
    ],
)
def test_every_command_reports_a_full_stdout_as_cannot_write(
    files: dict[str, Path], command: list[str]
) -> None:
    args = [str(files[a]) if a in files else a for a in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ctxwin", *args],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert "ctxwin: error: <stdout>: cannot write: No space left on device" in done.stderr
    assert "unexpected" not in done.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(files: dict[str, Path]) -> None:
    """``ctxwin apply ... | head -c 1``: exit 1, nothing on stderr, no traceback."""
    with subprocess.Popen(
        [sys.executable, "-m", "ctxwin", "apply", str(files["body"]), "-p", str(files["policy"])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()  # before it writes a byte
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert (code, err) == (1, b"")


def test_lint_refuses_a_link_out_of_the_folder_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "shared.yaml"
    outside.write_text("context_window: 9000\n", encoding="utf-8")
    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "defaults.yaml").symlink_to(outside)
    code, out, _ = cli(["lint", folder], capsys)
    assert code == 1
    assert f"{folder / 'defaults.yaml'}: a symbolic link to a file outside the policy folder" in out
    code, out, err = cli(["lint", folder, "--follow-symlinks"], capsys)
    assert (code, err) == (0, "")
