"""``ctxwin lint`` says of a policy folder what loading it does: ``context_window: auto``,
file names in any case, and a file that links to nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli.kit import cli


def test_lint_says_auto_for_a_context_window_from_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented ``context_window: auto`` ended lint with "unexpected ValueError:
    Cannot specify ',' with 's'" (exit 2)."""
    (tmp_path / "defaults.yaml").write_text("context_window: auto\n", encoding="utf-8")
    code, out, err = cli(["lint", tmp_path], capsys)
    assert (code, err) == (0, "")
    assert out == (
        f"{tmp_path}: ok (1 file, 0 tool rules, context window auto (the request's model's; "
        "128,000 for a model without a profile), tokenizer o200k_base)\n"
    )


@pytest.mark.parametrize("name", ["DEFAULTS.YAML", "defaults.Yml"])
def test_lint_reads_a_policy_file_named_in_any_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The loader reads ``.YAML`` files (the README: "in any case"); lint said "no .yaml
    files in this folder"."""
    (tmp_path / name).write_text("context_window: 1000\n", encoding="utf-8")
    code, out, err = cli(["lint", tmp_path], capsys)
    assert (code, err) == (0, "")
    assert out.startswith(f"{tmp_path}: ok (1 file, 0 tool rules, context window 1,000")


def test_lint_refuses_a_folder_of_hidden_yaml_only_as_it_refuses_no_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "._defaults.yaml").write_text("context_window: 1000\n", encoding="utf-8")
    code, out, err = cli(["lint", tmp_path], capsys)
    assert (code, out) == (2, "")
    assert err == f"ctxwin: error: {tmp_path}: no .yaml files in this folder\n"


def test_lint_names_a_policy_file_that_links_to_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its tool's rules were skipped without a word, and lint said ok."""
    (tmp_path / "defaults.yaml").write_text("context_window: 8000\n", encoding="utf-8")
    (tmp_path / "read_file.yaml").symlink_to(tmp_path / "gone" / "read_file.yaml")
    code, out, err = cli(["lint", tmp_path], capsys)
    assert code == 1
    assert out == (
        f"{tmp_path / 'read_file.yaml'}: a symbolic link to {tmp_path / 'gone' / 'read_file.yaml'}"
        ", which leads to no file: the rules it held would be missing (fix or remove the link)\n"
    )
    assert err == f"ctxwin lint: 1 error in {tmp_path}\n"


def test_lint_names_the_line_of_a_select_nested_too_deeply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """jmespath's parser ran out of stack: lint said "unexpected RecursionError" (exit 2)."""
    (tmp_path / "defaults.yaml").write_text("context_window: 6000\n", encoding="utf-8")
    expr = "[" * 500 + "@" + "]" * 500
    (tmp_path / "search.yaml").write_text(f"tool: search\nselect: '{expr}'\n", encoding="utf-8")
    code, out, err = cli(["lint", tmp_path], capsys)
    assert code == 1
    assert out == (
        f"{tmp_path / 'search.yaml'}:2: select: invalid JMESPath: nested more than 64 levels "
        "deep (brackets, parentheses, function calls, operators): simplify it\n"
    )
    assert err == f"ctxwin lint: 1 error in {tmp_path}\n"
