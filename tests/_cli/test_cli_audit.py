"""What a first-time user of the command line meets: outputs that cannot be written said
before the work, arguments checked where they are parsed, stdin read once, and the
command's own words in its errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests._cli.kit import cli, small_policy
from tests.builders import SMALL_POLICY_YAML, chat, coding_body


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return small_policy(tmp_path)


@pytest.fixture
def body(tmp_path: Path) -> Path:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(coding_body()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "{body}", "-p", "{policy}", "--html", "{out}"],
        ["replay", "{body}", "-p", "{policy}", "-o", "{out}", "--html", "{tmp}/ok.html"],
        ["report", "{body}", "-p", "{policy}", "--html", "{out}"],
        ["tune", "{body}", "-p", "{policy}", "-o", "{out}", "--holdout", "0"],
    ],
    ids=["replay --html", "replay -o", "report --html", "tune -o"],
)
def test_an_output_that_cannot_be_written_is_refused_before_any_work(
    command: list[str],
    body: Path,
    policy: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The replay (minutes on long traces) ran, printed its table, and then failed."""
    out = tmp_path / "no" / "such" / "folder" / "r.html"
    argv: list[str | Path] = [
        a.format(body=body, policy=policy, out=out, tmp=tmp_path) for a in command
    ]
    code, stdout, err = cli(argv, capsys)
    assert (code, stdout) == (2, "")
    assert err == f"ctxwin: error: {out}: cannot write: No such file or directory\n"
    assert not (tmp_path / "ok.html").exists()


def test_an_output_that_is_a_folder_is_refused(
    body: Path, policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(["replay", body, "-p", policy, "--html", tmp_path], capsys)
    assert (code, out) == (2, "")
    assert err == f"ctxwin: error: {tmp_path}: cannot write: Is a directory\n"


def test_report_html_of_several_requests_is_refused_before_the_report_is_printed(
    body: Path, policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    code, out, err = cli(["report", body, body, "-p", policy, "--html", page], capsys)
    assert (code, out) == (2, "")
    assert err == "ctxwin: error: --html draws one request; 2 were given\n"
    assert not page.exists()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("1", "must be at least 0 and below 1, not 1"),
        ("1.5", "must be at least 0 and below 1, not 1.5"),
        ("-0.1", "must be at least 0 and below 1, not -0.1"),
        ("nan", "must be at least 0 and below 1, not nan"),
        ("half", "not a number: 'half'"),
    ],
)
def test_holdout_out_of_range_is_a_usage_error_naming_the_value_given(
    value: str, said: str, body: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(["tune", body, "-p", policy, f"--holdout={value}"], capsys)
    assert (code, out) == (2, "")
    assert err == (f"ctxwin tune: error: argument --holdout: {said} (see 'ctxwin tune --help')\n")


def test_tune_names_the_known_pricing_presets_as_replay_does(
    body: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replayed = cli(["replay", body, "-p", policy, "--pricing", "cheap"], capsys)
    tuned = cli(["tune", body, "-p", policy, "--pricing", "cheap"], capsys)
    assert replayed[0] == tuned[0] == 2
    assert tuned[2] == replayed[2]
    assert "known: anthropic, " in tuned[2]


def test_stdin_given_twice_is_said_so(
    policy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second '-' found stdin empty: "<stdin>: empty input (no request)"."""
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(coding_body())))
    code, out, err = cli(["replay", "-", "-", "-p", policy], capsys)
    assert (code, out) == (2, "")
    assert err == "ctxwin: error: '-' is given twice: stdin is read once\n"


def test_a_link_refused_in_a_policy_folder_names_the_option_that_reads_it(
    body: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("tool: bash\nmax_tokens: 30\n", encoding="utf-8")
    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "defaults.yaml").write_text(SMALL_POLICY_YAML, encoding="utf-8")
    (folder / "bash.yaml").symlink_to(outside)
    code, _, err = cli(["report", body, "-p", folder], capsys)
    assert code == 2
    assert err.endswith("(not read; --follow-symlinks reads it)\n")
    assert "load_policy" not in err


def test_tune_says_one_trace_not_one_traces(
    body: Path, policy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(["tune", body, "-p", policy, "--holdout", "0"], capsys)
    assert code == 0
    assert "on 1 training trace;" in out
    assert "  1 trace  " in out
    assert "1 traces" not in out


def test_the_exit_statuses_of_each_command_are_in_its_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """replay and tune exit 1 on a request over the window under ``overflow: error``; every
    command exits 130 when interrupted."""
    assert cli(["--help"], capsys)[1].count("130  interrupted (Ctrl-C)") == 1
    replay_help = " ".join(cli(["replay", "--help"], capsys)[1].split())
    assert "1 when a managed request has pairing problems or is over the context window" in (
        replay_help
    )
    tune_help = " ".join(cli(["tune", "--help"], capsys)[1].split())
    assert "1 when a request of the current policy is over the context window" in tune_help
    assert "exit status: 0 done" in " ".join(cli(["schema", "--help"], capsys)[1].split())


def test_a_policy_over_the_window_under_overflow_error_exits_1_in_replay_and_tune(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps(chat([[("bash", "x " * 900)]] * 4)), encoding="utf-8")
    strict = tmp_path / "strict.yaml"
    strict.write_text("context_window: 600\noverflow: error\n", encoding="utf-8")
    for command in ("replay", "tune"):
        code, out, err = cli([command, path, "-p", strict], capsys)
        assert (code, out) == (1, ""), command
        assert "over the context window of 600 tokens" in err


def test_report_and_apply_take_server_state_as_check_and_repair_do(
    policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Responses input continuing a server-side conversation (its calls on the server):
    check and repair took --server-state, report and apply refused the request, advising
    a request key the user cannot add from the command line."""
    path = tmp_path / "continued.json"
    output = {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}
    path.write_text(json.dumps({"input": [output]}), encoding="utf-8")
    code, out, err = cli(["report", path, "-p", policy], capsys)
    assert (code, out) == (2, "")
    assert err.endswith("(if the calls live on the provider's side, pass --server-state)\n")
    code, out, err = cli(["report", path, "-p", policy, "--server-state", "--json"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["requests"][0]["report"]["messages"] == {"before": 1, "after": 1}
    code, out, err = cli(["apply", path, "-p", policy, "--server-state"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out) == {"input": [output]}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("null", "JSON null"),
        ('"hello"', "JSON string"),
        ("[1, 2]", "[0]: cannot tell the wire format of this JSON array"),
        ("3.5", "JSON number"),
        ("true", "JSON boolean"),
        ('{"messages": []}', "JSON object"),
    ],
)
def test_json_that_is_not_a_request_is_named_in_json_terms(
    text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It read "cannot tell the wire format of this NoneType"."""
    path = tmp_path / "not-a-request.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = cli(["check", path], capsys)
    assert (code, out) == (2, "")
    if not said.startswith("["):
        said = f"cannot tell the wire format of this {said}"
    assert err.startswith(f"ctxwin: error: {path}: {said}: ")


@pytest.mark.parametrize(
    "command",
    [[], ["apply"], ["report"], ["check"], ["repair"], ["lint"], ["schema"], ["replay"], ["tune"]],
)
def test_help_fits_an_80_column_terminal(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The descriptions of ``ctxwin`` and ``ctxwin lint`` were one line of 150 columns."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli([*command, "--help"], capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
