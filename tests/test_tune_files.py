"""ctxwin.tune on a policy folder: the printed diff changes each setting where it lives, so
that the policy it gives loads and replays to the printed figures."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

import ctxwin
from ctxwin import Policy
from ctxwin.replay import replay
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tune import tune

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def apply_diff(diff: str) -> list[Path]:
    """Apply a printed diff to the files its headers name (``--- current: PATH``), as
    ``patch`` would: every context and removed line must be the file's. The files changed."""
    changed = []
    for section in re.split(r"^--- ", diff, flags=re.M)[1:]:
        header, _tuned, *body = section.splitlines()
        assert header.startswith("current: "), header  # a file, named
        path = Path(header.removeprefix("current: "))
        old = path.read_text(encoding="utf-8").splitlines()
        new: list[str] = []
        at = 0
        for line in body:
            hunk = _HUNK.match(line)
            if hunk:
                start = int(hunk[1]) - (hunk[2] != "0")
                new += old[at:start]
                at = start
            elif line[:1] in ("-", " "):
                assert old[at] == line[1:], (path, at, line)
                if line[0] == " ":
                    new.append(old[at])
                at += 1
            else:
                assert line[:1] == "+", line
                new.append(line[1:])
        new += old[at:]
        path.write_text("\n".join(new) + "\n", encoding="utf-8")
        changed.append(path)
    return changed


def write_yaml(path: Path, data: dict[str, Any]) -> None:
    """``data`` as the diff prints it (keys sorted), so that the diff applies to the file."""
    path.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")


def test_a_default_cap_in_a_tool_file_is_tuned_in_that_file(tmp_path: Path) -> None:
    """With the "*" rules in a tool file (``tool: "*"``), the diff added ``tools: '*'`` to
    the defaults: applied, the policy no longer loaded ("tool '*' already has rules in
    any_tool.yaml"), and the figures printed were of the file's rules with the new cap."""
    write_yaml(
        tmp_path / "defaults.yaml",
        {"context_window": 6000, "window": {"trigger": 0.6, "target": 0.4}},
    )
    write_yaml(tmp_path / "any_tool.yaml", {"tool": "*", "max_tokens": 3000, "truncate": "tail"})
    traces = [
        (
            f"t{k}",
            agent_body(
                [[("read_file", {"path": f"f{i}.py"}, "word " * (600 + 50 * k))] for i in range(9)]
            ),
        )
        for k in range(3)
    ]
    result = tune(traces, Policy(tmp_path, counter=FakeCounter()), holdout=0)
    assert "tools" not in result.best
    assert [f.path for f in result.files] == [str(tmp_path / "any_tool.yaml")]
    assert result.files[0].tuned["max_tokens"] < 3000  # the search did lower the cap
    assert result.files[0].tuned["truncate"] == "tail"  # the file's other rules stay

    changed = apply_diff(result.diff())

    assert changed[-1] == tmp_path / "any_tool.yaml"
    tuned = Policy(tmp_path, counter=FakeCounter())  # loads
    assert [t.rules.max_tokens for t in tuned.compiled.tools if t.pattern == "*"] == [
        result.files[0].tuned["max_tokens"]
    ]
    runs = [replay(body, tuned, name=name) for name, body in traces]
    cost = sum(r.managed.effective_cost for r in runs)
    unmanaged = sum(r.unmanaged.effective_cost for r in runs)
    assert cost / unmanaged == result.best_train.ratio
    assert max(r.managed.peak for r in runs) == result.best_train.peak


def test_a_default_cap_in_the_defaults_stays_in_the_defaults(tmp_path: Path) -> None:
    """Without a ``tool: "*"`` file the cap is the defaults', as before; the diff names the
    defaults file."""
    write_yaml(
        tmp_path / "defaults.yaml",
        {"context_window": 6000, "tools": {"*": {"max_tokens": 3000}}},
    )
    write_yaml(tmp_path / "read.yaml", {"tool": "read", "max_tokens": 2000})
    body = agent_body([[("grep", {"q": i}, "word " * 700)] for i in range(9)])
    result = tune([("t", body)], Policy(tmp_path, counter=FakeCounter()), holdout=0, passes=1)
    assert result.files == ()
    assert result.defaults_file == str(tmp_path / "defaults.yaml")
    assert result.best["tools"]["*"]["max_tokens"] < 3000
    assert apply_diff(result.diff()) == [tmp_path / "defaults.yaml"]
    assert (
        ctxwin.load_policy(tmp_path).config.tools["*"].max_tokens
        == (result.best["tools"]["*"]["max_tokens"])
    )


def test_a_setting_written_at_its_default_value_is_on_the_current_side(tmp_path: Path) -> None:
    """The diff's current side was the settings dumped without their defaults, not what the
    file writes: a ``keep_rounds: 2`` written out (the default) was not in it, a tuned
    ``keep_rounds: 1`` came out as an added line, and the file, so changed, held the key
    twice and no longer loaded."""
    write_yaml(
        tmp_path / "defaults.yaml",
        {
            "context_window": 6000,
            "tools": {"*": {"max_tokens": 3000}},
            "window": {"keep_rounds": 2, "strategy": "cost", "trigger": 0.6, "target": 0.4},
        },
    )
    traces = [
        (f"t{k}", agent_body([[("read", {"i": i}, "word " * (600 + 50 * k))] for i in range(9)]))
        for k in range(3)
    ]
    result = tune(traces, Policy(tmp_path, counter=FakeCounter()), holdout=0, passes=1)
    assert result.current["window"]["keep_rounds"] == 2
    assert result.current["window"]["strategy"] == "cost"
    assert apply_diff(result.diff()) == [tmp_path / "defaults.yaml"]
    tuned = ctxwin.load_policy(tmp_path).config  # loads, with the tuned settings
    assert tuned.window.keep_rounds == result.best["window"]["keep_rounds"]
    assert tuned.tools["*"].max_tokens == result.best["tools"]["*"]["max_tokens"]


def test_a_folder_without_defaults_gets_its_new_defaults_file_named(tmp_path: Path) -> None:
    """A folder of tool files only: the settings the search changed besides the cap came out
    under ``--- current`` with no file named. They now go in the folder's ``defaults.yaml``,
    said to be new; written, the policy loads with them."""
    write_yaml(tmp_path / "any.yaml", {"tool": "*", "max_tokens": 3000})
    body = agent_body([[("grep", {"q": i}, "word " * 2500)] for i in range(14)])
    result = tune([("t", body)], Policy(tmp_path, counter=FakeCounter()), holdout=0, passes=1)
    defaults = tmp_path / "defaults.yaml"
    assert result.defaults_file == str(defaults)
    diff = result.diff()
    assert result.best, "the search changed no setting of the defaults: nothing tested"
    head, _, rest = diff.partition("\n")
    assert head == "--- /dev/null"
    assert rest.startswith(f"+++ tuned: {defaults} (a new file)")
    new_file, _, others = rest.partition("\n--- ")
    added = [line[1:] for line in new_file.splitlines()[2:] if line.startswith("+")]
    defaults.write_text("\n".join(added) + "\n", encoding="utf-8")
    if others:
        apply_diff("--- " + others)
    loaded = ctxwin.load_policy(tmp_path).config
    assert loaded.window.keep_rounds == result.best.get("window", {}).get("keep_rounds", 2)


def test_a_folder_named_by_a_relative_path_gets_its_defaults_file_named(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The policy's sources are the paths it was named by: a folder given as ``pol`` holds
    ``pol/any.yaml``, which the new defaults file's lookup took for no file at all."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pol").mkdir()
    write_yaml(tmp_path / "pol" / "any.yaml", {"tool": "*", "max_tokens": 3000})
    body = agent_body([[("grep", {"q": i}, "word " * 2500)] for i in range(14)])
    result = tune([("t", body)], Policy("pol", counter=FakeCounter()), holdout=0, passes=1)
    assert result.defaults_file == os.path.join("pol", "defaults.yaml")
    assert result.diff().startswith("--- /dev/null\n+++ tuned: pol/defaults.yaml (a new file)")


def test_one_tool_file_loaded_alone_names_no_defaults_file_beside_it(tmp_path: Path) -> None:
    """The ``defaults.yaml`` beside it was not read: the diff said its settings were ``{}``,
    and the lines to add there would have changed the policy of that folder."""
    write_yaml(tmp_path / "defaults.yaml", {"context_window": 6000, "window": {"keep_rounds": 4}})
    write_yaml(tmp_path / "any.yaml", {"tool": "*", "max_tokens": 3000})
    body = agent_body([[("grep", {"q": i}, "word " * 2500)] for i in range(14)])
    policy = Policy(tmp_path / "any.yaml", counter=FakeCounter())
    result = tune([("t", body)], policy, holdout=0, passes=1)
    assert result.defaults_file is None
    assert result.best, "the search changed no setting of the defaults: nothing tested"
    assert result.diff().startswith("--- current\n+++ tuned\n")
    assert "defaults.yaml" not in result.diff()


def test_one_tool_file_alone_in_its_folder_names_no_defaults_file(tmp_path: Path) -> None:
    """The folder held that file only, so its files matched the sources: the diff named a
    defaults.yaml there, which loading that file never reads."""
    write_yaml(tmp_path / "any.yaml", {"tool": "*", "max_tokens": 3000})
    body = agent_body([[("grep", {"q": i}, "word " * 2500)] for i in range(14)])
    alone = tune([("t", body)], Policy(tmp_path / "any.yaml", counter=FakeCounter()), holdout=0)
    folder = tune([("t", body)], Policy(tmp_path, counter=FakeCounter()), holdout=0)
    assert (alone.defaults_file, folder.defaults_file) == (None, str(tmp_path / "defaults.yaml"))


def test_a_policy_with_overrides_diffs_against_what_its_file_writes(tmp_path: Path) -> None:
    """``with_overrides`` rebuilt its settings from all of them, every one then set: the
    diff's current side was every setting (a hunk at line 18 of a 3-line file)."""
    write_yaml(tmp_path / "defaults.yaml", {"context_window": 6000, "window": {"keep_rounds": 2}})
    policy = Policy(tmp_path, counter=FakeCounter()).with_overrides(pricing="anthropic")
    body = agent_body([[("grep", {"q": i}, "word " * 2500)] for i in range(14)])
    result = tune([("t", body)], policy, holdout=0, passes=1)
    assert result.current == {
        "context_window": 6000,
        "pricing": "anthropic",
        "window": {"keep_rounds": 2},
    }
