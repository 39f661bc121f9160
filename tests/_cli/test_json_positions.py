"""Where the command line says a JSON error is: a line and column the file has. At the end
of a file that ends with a line break (a body cut short), Python's decoder stands on the
line after it: a 1-line file's missing bracket was said to be on line 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ctxwin._cli import main
from tests.builders import SMALL_POLICY_YAML, coding_body

CUT = '{"messages": [{"role": "user", "content": "hi"}'
"""A request cut short: 47 characters, its list and object left open."""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8"))  # as written: no newline translation
    return path


def error_of(argv: list[str | Path], capsys: pytest.CaptureFixture[str]) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    return err


@pytest.mark.parametrize("command", ["check", "apply"])
@pytest.mark.parametrize(
    ("text", "where"),
    [
        (CUT + "\n", "1:48"),
        (CUT + "\r\n", "1:48"),
        (CUT, "1:48"),
        (CUT + "\n\n\n", "3:1"),
        ('{"messages": [\n  {"role": "user", "content": "hi"}\n', "2:36"),
        ('{"messages": [\n', "1:15"),
    ],
)
def test_a_json_file_cut_short_is_said_at_its_real_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str, where: str
) -> None:
    path = write(tmp_path, "r.json", text)
    argv: list[str | Path] = [command, path]
    if command == "apply":
        argv += ["-p", write(tmp_path, "p.yaml", SMALL_POLICY_YAML)]
    reason = "Expecting value" if text.endswith("[\n") else "Expecting ',' delimiter"
    assert error_of(argv, capsys) == (
        f"ctxwin: error: {path}:{where}: invalid JSON: {reason} at the end of the file\n"
    )


def test_an_error_inside_a_json_file_keeps_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "r.json", '{"messages": [\n  {"role": "user" "content": "x"}]}\n')
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:2:19: invalid JSON: Expecting ',' delimiter\n"
    )


def test_lines_broken_by_a_carriage_return_alone_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON takes CR as whitespace: an old Mac file's second line is line 2, not column 51."""
    path = write(tmp_path, "r.json", '{"messages": []}\r{"oops": 1}\r')
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:2:1: invalid JSON: Extra data\n"
    )


def test_a_cut_jsonl_request_on_the_last_line_is_at_the_end_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "r.jsonl", json.dumps(coding_body()) + "\n" + CUT + "\n")
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:2:48: invalid JSON: Expecting ',' delimiter "
        "at the end of the file\n"
    )


def test_a_cut_jsonl_request_before_others_is_at_the_end_of_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "r.jsonl", CUT + "\r\n" + json.dumps(coding_body()) + "\r\n")
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:1:48: invalid JSON: Expecting ',' delimiter "
        "at the end of the line\n"
    )


def test_a_jsonl_string_holding_a_unicode_line_separator_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSONL breaks lines at \\n alone; U+2028 and U+0085 are valid raw in a JSON string
    (json.dumps(ensure_ascii=False) writes them so) and split no request."""
    body = {"messages": [{"role": "user", "content": "a\u2028b\x85c"}]}
    path = write(tmp_path, "r.jsonl", json.dumps(body, ensure_ascii=False) + "\n")
    code = main(["check", str(path), "--format", "openai-chat"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out == "checked 1 request: no problems\n"


def test_stdin_cut_short_is_said_at_its_real_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(CUT + "\n"))
    assert error_of(["check", "-"], capsys) == (
        "ctxwin: error: <stdin>:1:48: invalid JSON: Expecting ',' delimiter "
        "at the end of the file\n"
    )


@pytest.mark.parametrize("after", ["}\n", json.dumps({"messages": []}, indent=2) + "\n"])
def test_a_pretty_printed_stdin_document_followed_by_more_is_said_where_it_ends(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], after: str
) -> None:
    """A pretty-printed request on stdin followed by anything (a stray ``}``, a second
    document of ``jq .``) was read as JSONL and said at its first line ("1:2: Expecting
    property name"), where the same bytes in a file are said where the extra data starts."""
    text = json.dumps(coding_body(), indent=2) + "\n"
    line = text.count("\n") + 1
    monkeypatch.setattr("sys.stdin", io.StringIO(text + after))
    assert error_of(["check", "-"], capsys) == (
        f"ctxwin: error: <stdin>:{line}:1: invalid JSON: Extra data\n"
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_no_json_and_said_where_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], constant: str
) -> None:
    """Python's decoder takes them; strict parsers and the providers do not: the file is
    refused at the constant, past the same words inside strings."""
    text = (
        '{"model": "gpt-4o", "messages": [{"role": "user",\n'
        '  "content": "say \\"NaN\\" -Infinity"}],\n'
        f'  "top_p": {constant}}}\n'
    )
    path = write(tmp_path, "r.json", text)
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:3:12: invalid JSON: {constant} is not a JSON number\n"
    )


def test_nan_on_a_line_of_jsonl_is_said_at_that_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "r.jsonl", json.dumps(coding_body()) + '\n{"x": [1, NaN]}\n')
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:2:11: invalid JSON: NaN is not a JSON number\n"
    )


def test_infinity_in_jsonl_on_stdin_is_said_at_its_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stdin holding several documents is read as JSONL: a constant is said as on a file."""
    text = json.dumps(coding_body()) + '\n{"x": -Infinity}\n'
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert error_of(["check", "-"], capsys) == (
        "ctxwin: error: <stdin>:2:7: invalid JSON: -Infinity is not a JSON number\n"
    )


def test_an_integer_too_long_for_python_is_said_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python refuses to read an integer of more than 4,300 digits: that was an unexpected
    ValueError ending the command, with no place."""
    digits = "7" * 5000
    path = write(tmp_path, "r.json", '{"messages": [],\n "seed": ' + digits + "}\n")
    assert error_of(["check", path], capsys) == (
        f"ctxwin: error: {path}:2:10: invalid JSON: an integer of more than 4,300 digits, "
        "which Python does not read (sys.set_int_max_str_digits raises the limit)\n"
    )
