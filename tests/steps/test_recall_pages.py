"""A recall answer over its cap is paged by lines: its notice says which lines it shows and
the range to ask for next, never the call that made it (which answers the same page)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin._core.model import FORMATS, ToolResult
from ctxwin.steps._handles import handle_of
from ctxwin.testing import agent_body

CAP = 1000
BIG = "".join(f"line {i}: " + "word " * 10 + "\n" for i in range(1, 1001))
NOTICE = re.compile(r"\[recall: [^\n]*\](\n|\Z)")
NEXT = re.compile(r'Next: recall\("(r-[0-9a-f]{16})", lines="([0-9-]+)"\)( with the same grep)?')

Rounds = list[list[tuple[str, dict[str, Any], str]]]


def policy(**tools: Any) -> ctxwin.Policy:
    return ctxwin.load_policy(
        {
            "context_window": 200_000,
            "recall": {"enabled": True, "max_tokens": CAP},
            "tools": {"read_file": {"max_tokens": 500}, **tools},
        }
    )


def lines(first: int, last: int, text: str = BIG) -> str:
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


def read(p: ctxwin.Policy, text: str = BIG, fmt: str = "openai-chat") -> Rounds:
    """The history after a read capped by the policy (its original kept for recall)."""
    rounds: Rounds = [[("read_file", {"path": "big.txt"}, text)]]
    p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    return rounds


def recalled(
    p: ctxwin.Policy, rounds: Rounds, args: dict[str, Any], fmt: str = "openai-chat"
) -> str:
    """The answer to a recall call with ``args`` as the next request sends it."""
    rounds.append([("recall", args, p.recall_call(args).text)])
    out = p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    assert ctxwin.check(out.request, fmt) == []
    sent = [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert p.counter.count(sent[-1].text) <= CAP
    return sent[-1].text


def test_a_capped_recall_names_the_lines_it_shows_and_the_next_range() -> None:
    """The reviewer's loop: the notice said recall("<the same handle>") returns the whole
    result, and that call answered the same capped text every time."""
    p = policy()
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h})
    shown = re.search(r"\[recall: lines 1-(\d+) of 1000 shown", page)
    assert shown, page[-200:]
    n = int(shown.group(1))
    assert page.startswith(lines(1, n))  # whole lines, exactly as in the original
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, f"{n + 1}-1000")
    assert "returns the whole" not in page


PER_TOOL = {
    "read_file only": {"read_file": {"max_tokens": 500, "recall": True}},
    "every tool": {"*": {"recall": True}, "read_file": {"max_tokens": 500, "recall": True}},
    "a rule for recall": {
        "read_file": {"max_tokens": 500, "recall": True},
        "recall": {"max_tokens": CAP, "truncate": "head"},
    },
}


@pytest.mark.parametrize("tools", PER_TOOL.values(), ids=PER_TOOL)
def test_an_answer_is_paged_when_recall_is_on_for_some_tools_only(tools: Any) -> None:
    """With recall on per tool the recall tool was registered but its answers, recall off
    for them, were cut by tokens with the generic notice: no lines, no next range (review
    s50-8 finding 2)."""
    p = ctxwin.load_policy(
        {"context_window": 200_000, "recall": {"enabled": False, "max_tokens": CAP}, "tools": tools}
    )
    assert p.recall_enabled
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h})
    shown = re.search(r"\[recall: lines 1-(\d+) of 1000 shown", page)
    assert shown, page[-200:]
    assert page.startswith(lines(1, int(shown.group(1))))
    assert NEXT.search(page) is not None


@pytest.mark.parametrize("fmt", FORMATS)
def test_following_the_notices_gives_every_line_of_the_original_once(fmt: str) -> None:
    p = policy()
    rounds = read(p, fmt=fmt)
    args: dict[str, Any] = {"handle": handle_of(BIG)}
    asked, pages = [args], []
    for _ in range(40):
        page = recalled(p, rounds, args, fmt)
        pages.append(NOTICE.sub("", page, count=1))
        nxt = NEXT.search(page)
        if nxt is None:
            break
        args = {"handle": nxt.group(1), "lines": nxt.group(2)}
        assert args not in asked, "the notice sends the agent back to a call it made"
        asked.append(args)
    assert len(pages) > 5
    assert "".join(pages) == BIG


def test_an_answer_to_a_range_is_numbered_as_in_the_original() -> None:
    p = policy()
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h, "lines": "101-1000"})
    shown = re.search(r"\[recall: lines 101-(\d+) of 101-1000 shown", page)
    assert shown, page[-200:]
    n = int(shown.group(1))
    assert page.startswith(lines(101, n))
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, f"{n + 1}-1000")


def test_a_grep_answer_names_the_line_to_go_on_from() -> None:
    p = policy()
    h = handle_of(BIG)
    rounds = read(p)
    grep = r"line \d*7:"
    page = recalled(p, rounds, {"handle": h, "grep": grep})
    shown = re.search(r"\[recall: (\d+) of 100 matching lines shown, up to line (\d+)", page)
    assert shown, page[-200:]
    upto = int(shown.group(2))
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.groups() == (h, f"{upto + 1}-", " with the same grep")
    rest = recalled(p, rounds, {"handle": h, "lines": nxt.group(2), "grep": grep})
    assert NOTICE.sub("", page) + rest == p.recall(h, grep=grep).text


def test_a_head_and_tail_page_names_the_lines_between() -> None:
    p = policy(recall={"max_tokens": CAP, "truncate": "head_tail"})
    h = handle_of(BIG)
    page = recalled(p, read(p), {"handle": h})
    shown = re.search(r"\[recall: lines 1-(\d+) and (\d+)-1000 of 1000 shown", page)
    assert shown, page[:300]
    a, b = int(shown.group(1)), int(shown.group(2))
    notice = NOTICE.search(page)
    assert notice is not None
    assert page == lines(1, a) + notice.group(0) + lines(b, 1000)
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.group(2) == f"{a + 1}-{b - 1}"


def test_a_line_over_the_cap_is_shown_in_part_and_the_next_range_starts_after_it() -> None:
    long_line = "x" * 40_000 + "\n"
    text = long_line + "short line\n"
    p = policy()
    h = handle_of(text)
    page = recalled(p, read(p, text), {"handle": h})
    assert page.startswith("x" * 1000)
    assert "[recall: line 1 of 2 shown in part" in page
    nxt = NEXT.search(page)
    assert nxt is not None
    assert (nxt.group(1), nxt.group(2)) == (h, "2")


def test_the_page_is_the_cap_edit_and_is_left_alone_when_sent_again() -> None:
    p = policy()
    rounds = read(p)
    page = recalled(p, rounds, {"handle": handle_of(BIG)})
    out = p.apply(agent_body(rounds))
    (edit,) = [e for e in out.report.edits if e.tool == "recall"]
    assert (edit.step, edit.note) == ("cap", "paged by lines")
    assert edit.tokens_after == p.counter.count(page) <= CAP
    rounds[-1] = [("recall", {"handle": handle_of(BIG)}, page)]  # a history that kept the page
    again = p.apply(agent_body(rounds))
    assert not [e for e in again.report.edits if e.tool == "recall"]


# ------------------------------------------------------------ tail and head_tail pages

LOG = "".join(f"step {i}: ok\n" for i in range(1, 40)) + '{"blob": "' + "x" * 20000 + '"}\n'
"""39 short lines and a last line (minified JSON) far over a recall answer's cap."""


def small(truncate: str, cap: int = 200) -> ctxwin.Policy:
    """A recall tool file with its own cap and ``truncate``, no window clearing."""
    return ctxwin.load_policy(
        {
            "context_window": 200_000,
            "window": {"strategy": "threshold"},
            "recall": {"enabled": True, "max_tokens": cap},
            "tools": {
                "read_file": {"max_tokens": 30},
                "recall": {"max_tokens": cap, "truncate": truncate},
            },
        }
    )


def answer(p: ctxwin.Policy, text: str, args: dict[str, Any], fmt: str = "openai-chat") -> str:
    """The page a recall with ``args`` gets after a read of ``text`` (one round each)."""
    rounds: Rounds = [[("read_file", {"path": "a"}, text)]]
    p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    rounds.append([("recall", args, p.recall_call(args).text)])
    out = p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    return [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)][
        -1
    ].text


def test_a_tail_page_over_a_long_last_line_shows_its_end_and_names_the_lines_before() -> None:
    """The reviewer's log: the page fell back to the start of the range, showed 25 whole
    lines labelled 'line 1 ... in part' and sent the agent to lines 2-40: 40 recalls, each
    repeating all but one line of the one before."""
    p = small("tail")
    h = handle_of(LOG)
    first = answer(p, LOG, {"handle": h})
    assert first.startswith("[recall: line 40 of 40 shown in part, its end (")
    assert first.endswith("x" * 100 + '"}\n')
    assert "step" not in first
    nxt = NEXT.search(first)
    assert nxt is not None
    assert nxt.group(2) == "1-39"
    second = answer(p, LOG, {"handle": h, "lines": "1-39"})
    shown = re.match(r"\[recall: lines (\d+)-39 of 1-39 shown", second)
    assert shown, second[:100]
    n = int(shown.group(1))
    assert second.endswith("\n" + lines(n, 39, LOG))
    assert p.counter.count(lines(1, n - 1, LOG)) < 200  # the rest fits the third page
    nxt = NEXT.search(second)
    assert nxt is not None
    assert nxt.group(2) == f"1-{n - 1}"
    assert answer(p, LOG, {"handle": h, "lines": nxt.group(2)}) == lines(1, n - 1, LOG)


def test_a_head_and_tail_page_gives_the_head_all_when_the_last_line_is_too_long() -> None:
    """Line 1 over half the room but within all of it, the last over all of it: the page
    showed line 1 whole and part of line 2, labelled 'line 1 in part', next 2-3."""
    text = "first " * 100 + "\n" + "second line\n" + "y" * 20000 + "\n"
    p = small("head_tail")
    page = answer(p, text, {"handle": handle_of(text)})
    assert page.startswith(lines(1, 2, text) + "[recall: lines 1-2 of 3 shown (")
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.group(2) == "3"


def test_a_head_and_tail_page_gives_the_tail_all_when_the_first_line_is_too_long() -> None:
    """The first line over the room: the tail had half of it, and ten lines that fit
    the whole took two pages."""
    text = "z" * 20000 + "\n" + "".join(f"row {i} of the table\n" for i in range(2, 16))
    p = small("head_tail")
    page = answer(p, text, {"handle": handle_of(text)})
    assert page.startswith("[recall: lines 2-15 of 15 shown (")
    assert page.endswith(".]\n" + lines(2, 15, text))
    nxt = NEXT.search(page)
    assert nxt is not None
    assert nxt.group(2) == "1"


# ------------------------------------------------------------ following every notice

WORDS = ["alpha", "beta", "γάμμα", "x=1;", "{}", "日本語", "é"]
PAGE_NOTICE = re.compile(r"\[(?:recall: )?lines? [^\]\n]*\]")
SHOWN = re.compile(
    r"\[(?:recall: )?lines? (\d+)(?:-(\d+))?(?: and (\d+)(?:-(\d+))?)? of [0-9-]+ shown"
    r"( in part)?(, its end)?"
)
ASK = re.compile(r'recall\("r-[0-9a-f]{16}", lines="(\d+)(?:-(\d+))?"\)')
LONGEST_NOTICE = (
    "[recall: line 12345 of 12345-12399 shown in part, its end (longer than one answer holds; "
    'grep finds text in it). Next: recall("r-0123456789abcdef", lines="12345-12398").]'
)
_POLICIES: dict[tuple[str, int], ctxwin.Policy] = {}


def split_lines(text: str) -> list[str]:
    """The lines recall numbers: ended at ``\n``, the last one without one if it has none."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@dataclass
class Walk:
    """What following every notice from a first recall showed."""

    whole: set[int] = field(default_factory=set)
    in_part: set[int] = field(default_factory=set)
    recalls: int = 0


def check_page(page: str, asked: tuple[int, int], ls: list[str]) -> tuple[set[int], set[int]]:
    """The lines a page shows whole and in part, checked against the lines its notice
    names: whole lines exactly as in the original, a part the start (or end) of its line."""
    a, b = asked
    notices = PAGE_NOTICE.findall(page)
    if not notices:  # the rest of the range, whole
        assert page == "".join(ls[a - 1 : b])
        return set(range(a, b + 1)), set()
    (notice,) = notices
    before, after = page.split(notice)
    shown = SHOWN.match(notice)
    assert shown, notice
    n = [int(g) if g else 0 for g in shown.groups()[:4]]
    spans = [(n[0], n[1] or n[0])] + ([(n[2], n[3] or n[2])] if n[2] else [])
    assert all(a <= x <= y <= b for x, y in spans), (notice, asked)
    if shown.group(5):  # one line over the room, in part
        k = n[0]
        if shown.group(6):  # its end
            assert (k, before) == (b, "")
            assert after.startswith("\n")
            assert len(after) > 1
            assert ls[k - 1].endswith(after[1:])
        else:
            assert (k, after) == (a, "")
            assert before.endswith("\n")
            assert len(before) > 1
            assert ls[k - 1].startswith(before[:-1])
        return set(), {k}
    assert after == "" or after.startswith("\n")
    assert before + after[1:] == "".join("".join(ls[x - 1 : y]) for x, y in spans)
    return {k for x, y in spans for k in range(x, y + 1)}, set()


def walk(p: ctxwin.Policy, cap: int, text: str, first: int, last: int, fmt: str) -> Walk:
    """Recall lines ``first``-``last`` of ``text`` (all of it from 1), then each range a
    notice names, checking each page: its lines, its cap, a fixed point of the policy."""
    ls, h = split_lines(text), handle_of(text)
    rounds: Rounds = [[("read_file", {"path": "a"}, text)]]
    p.apply(agent_body(rounds, format=fmt))  # type: ignore[arg-type]
    args: dict[str, Any] = {"handle": h}
    if (first, last) != (1, len(ls)):
        args["lines"] = f"{first}-{last}"
    seen, asked = Walk(), (first, last)
    while True:
        seen.recalls += 1
        assert seen.recalls <= 2 * len(ls) + 2, "the pages do not move on"
        body = agent_body([*rounds, [("recall", args, p.recall_call(args).text)]], format=fmt)  # type: ignore[arg-type]
        out = p.apply(body)
        assert p.apply(out.request).request == out.request  # a fixed point
        sent = [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
        page = sent[-1].text
        over = p.counter.count(page) - cap
        if over > 0:  # only where the short notice and one character of the line are
            (note,) = (e.note for e in out.report.edits if e.tool == "recall")
            assert f"max_tokens {cap:,} is below the notice" in (note or ""), note
            assert over <= 8, over
        whole, in_part = check_page(page, asked, ls)
        assert not whole & seen.whole, "a line shown whole twice"
        seen.whole |= whole
        seen.in_part |= in_part
        nxt = ASK.search(page)
        if nxt is None:
            return seen
        rest = (int(nxt.group(1)), int(nxt.group(2) or nxt.group(1)))
        assert asked[0] <= rest[0] <= rest[1] <= asked[1]
        assert not set(range(rest[0], rest[1] + 1)) & (whole | in_part)
        asked, args = rest, {"handle": h, "lines": f"{rest[0]}-{rest[1]}"}


def assert_walked(p: ctxwin.Policy, cap: int, text: str, first: int, last: int, fmt: str) -> None:
    """Following every notice shows each line of the range, whole but for lines over the
    room (over the cap: in part), in about as many recalls as the short lines' tokens fill
    pages, plus two for each long line (a page of its own, and a short one before it)."""
    ls = split_lines(text)
    seen = walk(p, cap, text, first, last, fmt)
    assert seen.whole | seen.in_part == set(range(first, last + 1))
    size = {k: p.counter.count(ls[k - 1]) for k in range(first, last + 1)}
    assert {k for k, n in size.items() if n > cap} <= seen.in_part
    assert {k for k, n in size.items() if n > cap // 2} >= seen.in_part
    short = [n for n in size.values() if n <= cap // 4]
    room = cap - p.counter.count(LONGEST_NOTICE) - 2 * max(short, default=0) - 4
    assert room > 0  # the originals are drawn so
    most = sum(short) // room + 2 * (len(size) - len(short)) + 2
    assert seen.recalls <= most, (seen.recalls, most)


def line_of(rng: random.Random, i: int) -> str:
    r = rng.random()
    if r < 0.1:
        return ""
    if r < 0.13:  # minified JSON, a long log line
        return rng.choice("z{é") * rng.randint(500, 6000)
    return f"L{i} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


@pytest.mark.parametrize("mode", ["head", "tail", "head_tail"])
@pytest.mark.parametrize("seed", range(4))
def test_seeded_walks_show_each_line_once_within_the_cap(mode: str, seed: int) -> None:
    """The reviewer's random walk: in tail mode a long last line sent the agent back one
    line at a time (1,082 such pages in 80 walks); in head_tail 56."""
    rng = random.Random(seed)
    for _ in range(3):
        n = rng.randint(20, 300)
        eol = rng.choice(["\n", "\r\n"])
        text = eol.join(line_of(rng, i) for i in range(1, n + 1)) + rng.choice([eol, ""])
        cap = rng.choice([200, 300, 600])
        p = _POLICIES.setdefault((mode, cap), small(mode, cap))
        total = len(split_lines(text))
        first = rng.choice([1, 1, rng.randint(1, total)])
        last = rng.choice([total, rng.randint(first, total)])
        assert_walked(p, cap, text, first, last, rng.choice(FORMATS))


@st.composite
def originals(draw: st.DrawFn) -> str:
    """A text of short, blank and over-long lines, LF or CRLF, with or without a final
    newline."""
    short = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
    long = st.builds(str.__mul__, st.sampled_from("z{é"), st.integers(1500, 4000))
    kinds = draw(st.lists(st.sampled_from("ssssssssbbl"), min_size=20, max_size=120))
    body = ["" if k == "b" else draw(long if k == "l" else short) for k in kinds]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(body) + draw(st.sampled_from([eol, ""]))


@pytest.mark.parametrize("mode", ["head", "tail", "head_tail"])
@given(text=originals(), cap=st.sampled_from([200, 300, 600]), data=st.data())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_following_every_notice_shows_each_line_once_within_the_cap(
    mode: str, text: str, cap: int, data: st.DataObject
) -> None:
    p = _POLICIES.setdefault((mode, cap), small(mode, cap))
    assume(p.counter.count(text) > 30)  # over the read's cap: its original kept
    total = len(split_lines(text))
    first = data.draw(st.sampled_from([1, data.draw(st.integers(1, total))]))
    last = data.draw(st.sampled_from([total, data.draw(st.integers(first, total))]))
    assert_walked(p, cap, text, first, last, "openai-chat")


# ------------------------------------------------------ lone surrogates and small caps

BLOB = b"payload chunk " * 3000


def surrogates(raw: bytes) -> str:
    """``raw`` as a tool decodes it with errors="surrogateescape" (a lone surrogate a byte)."""
    return raw.decode("utf-8", errors="surrogateescape")


@pytest.mark.parametrize(
    ("mode", "raw"),
    [
        ("head", b'{"id": 7, "blob": "\xff' + BLOB + b'"}\nline two\n'),
        ("head_tail", b'{"id": 7, "blob": "\xff' + BLOB + b'"}\nline two\n'),
        ("head", b"\xff" * 3000 + b"\nline two\n"),
        ("tail", b"line one\n" + BLOB + b'\xff"}\n'),
        ("tail", b"line one\n" + b"\xfe" * 3000 + b"\n"),
    ],
)
def test_a_line_in_part_with_a_lone_surrogate_shows_past_it(mode: str, raw: bytes) -> None:
    """The reviewer's case: the decoded cut reads U+FFFD where the line has a lone
    surrogate, and the part was cut back to before it: 19 characters shown of the line
    ('line 1 ... shown in part'), none of a line of such bytes, and the next range skipped
    the rest."""
    text = surrogates(raw)
    ls = split_lines(text)
    long = 1 if mode != "tail" else 2
    p = small(mode, 200)
    page = answer(p, text, {"handle": handle_of(text), "lines": str(long)})
    assert p.counter.count(page) <= 200
    notice = PAGE_NOTICE.search(page)
    assert notice is not None
    shown = page[: notice.start()] if mode != "tail" else page[notice.end() :]
    assert f"line {long} of {long}-{long} shown in part" in notice.group(0)
    if mode == "tail":
        assert shown.startswith("\n")
        assert ls[long - 1].endswith(shown[1:])
    else:
        assert shown.endswith("\n")
        assert ls[long - 1].startswith(shown[:-1])
    assert len(shown) > 100  # well past the surrogate, the original's own characters


class _Bytes:
    """A tokenizer of one token a UTF-8 byte whose decode writes U+FFFD for a character
    cut in two (a lone surrogate encoded as U+FFFD, as tiktoken does)."""

    can_encode = True

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode())

    def decode(self, tokens: list[int]) -> str:
        return bytes(tokens).decode("utf-8", errors="replace")


def test_a_part_keeps_no_character_split_between_tokens_and_no_fffd() -> None:
    from types import SimpleNamespace

    from ctxwin.steps._recall import _part_head, _part_tail

    enc = _Bytes()
    ctx: Any = SimpleNamespace(
        counter=SimpleNamespace(inner=enc), count=lambda s: len(enc.encode(s))
    )
    assert _part_head("é" * 10, 5, ctx) == "éé"  # the third é's first byte: U+FFFD
    assert _part_tail("日" * 10, 8, ctx) == "日日"  # two stray bytes: two U+FFFD
    assert _part_tail("😀" * 10, 11, ctx) == "😀😀"  # three
    assert _part_head("\udcff" * 10, 7, ctx) == "\udcff\udcff"  # U+FFFD is 3 bytes
    assert _part_tail("ab\udcffcd", 5, ctx) == "\udcffcd"


@pytest.mark.parametrize(
    ("mode", "cap"),
    [(m, c) for m in ("head", "head_tail") for c in (36, 40, 45, 50, 52, 53, 57)]
    + [("tail", c) for c in (39, 45, 50, 57)],  # 'in part, its end': a longer notice
)
def test_a_small_cap_shows_part_of_a_long_line(mode: str, cap: int) -> None:
    """The reviewer's cap of 36-57 tokens: the notice was sized by a form no page has (two
    spans and in part), 42 tokens for 34, and left none for the line; at 57 the long notice
    showing nothing was picked over the short one showing words. Line 1 was never shown."""
    long = "word " * 3000
    text = long + "\nshort two\nshort three\n" if mode != "tail" else "a\nb\n" + long + "\n"
    end = 1 if mode != "tail" else 3
    seen = walk(small(mode, cap), cap, text, 1, 3, "openai-chat")
    assert seen.in_part == {end}  # walk checks the part is text of the line, not a notice alone
    assert seen.whole == {1, 2, 3} - {end}


PIECES = ["word ", "\udcff", "\udcfe\udcfe", "😀", "日本", "é", "x"]


@pytest.mark.parametrize("seed", range(3))
def test_at_the_least_caps_no_line_is_skipped(seed: int) -> None:
    """The reviewer's walk: at caps of 36-40 tokens, a line starting with characters of
    several tokens (emoji, CJK, lone surrogates) left the short notice no room for one of
    them. The page showed the notice alone and sent the agent past the line, which was
    never shown. It now shows the least of the line that shows some, over the cap (the
    report says max_tokens is below the notice), and is left alone when sent again."""
    rng = random.Random(seed)
    walks = 0
    while walks < 12:
        mode, cap = rng.choice(["head", "tail", "head_tail"]), rng.choice([36, 38, 40])
        ls = [
            "".join(rng.choice(PIECES) for _ in range(rng.choice([2, 5, 400])))
            for _ in range(rng.randint(1, 4))
        ]
        if max(map(len, ls)) < 100:
            continue
        walks += 1
        text = "\n".join(ls) + rng.choice(["\n", ""])
        p = _POLICIES.setdefault((mode, cap), small(mode, cap))
        total = len(split_lines(text))
        seen = walk(p, cap, text, 1, total, "openai-chat")
        assert seen.whole | seen.in_part == set(range(1, total + 1))


def test_every_short_notice_a_page_writes_is_told_as_its_own() -> None:
    """A page over a cap below its notice is left alone when sent again because it is
    recognized: the short notice and one line or a part of one, before it or after it.
    Every form the pager writes must be."""
    from ctxwin.steps._recall import _OVER_CAP, _notice, _Page

    h = "r-0123456789abcdef"
    forms = [
        _Page(((1, 5),), "40", (6, 40)),
        _Page(((1, 5), (30, 40)), "1-40", (6, 29)),
        _Page(((3, 3),), "1-40", (4, 40), True),
        _Page(((40, 40),), "40", (1, 39), True, end=True),
        _Page(((3, 3),), "", (4, None), True, (1, 9)),
        _Page(((1, 7),), "", (8, None), False, (3, 9)),
        _Page(((1, 5),), "40", None),
    ]
    one_line = {2, 3, 4, 5}  # the forms a page of one line, or part of one, may have
    for i, form in enumerate(forms):
        notice = _notice(form, h, short=True)
        for page in (f"part of a line\n{notice}", f"{notice}\nend of a line\r\n"):
            assert bool(_OVER_CAP.fullmatch(page)) is (i in one_line), notice
        assert not _OVER_CAP.fullmatch(f"a line\nanother\n{notice}"), notice


def _recalled_once(cap: int, text: str, args: dict[str, Any]) -> tuple[ctxwin.Policy, str, Any]:
    p = ctxwin.load_policy(
        {
            "context_window": 200_000,
            "window": {"strategy": "threshold"},
            "recall": {"enabled": True, "max_tokens": cap},
            "tools": {"read_file": {"max_tokens": 24}, "recall": {"max_tokens": cap}},
        }
    )
    rounds: Rounds = [[("read_file", {"path": "a"}, text)]]
    p.apply(agent_body(rounds))
    args = {"handle": handle_of(text), **args}
    out = p.apply(agent_body([*rounds, [("recall", args, p.recall_call(args).text)]]))
    sent = [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    return p, sent[-1].text, out


def test_an_original_holding_a_page_notice_is_paged() -> None:
    """The review of e3ff5a3: an original holding a line like a page's notice (a file
    tool's own paging footer) was taken for a page over its cap and sent whole: 6,011
    tokens under a cap of 300."""
    body = "".join(f"line {i}: " + "word " * 10 + "\n" for i in range(1, 401))
    for footer in ("", "[lines 1-400 of 900 shown]\n", "[line 3 of 9 shown in part]\n"):
        p, page, out = _recalled_once(300, body + footer, {})
        assert p.counter.count(page) <= 300
        assert [e.note for e in out.report.edits if e.tool == "recall"] == ["paged by lines"]


def test_a_grep_match_over_a_small_cap_shows_its_text_and_moves_on() -> None:
    """The review of e3ff5a3: at caps of 40-60 the part of a long matching line was cut in
    its 'N:' number ('120'), the page named line 1 and sent the agent to lines 2-, 3-...
    (12,000 recalls); at others it showed '12000:' alone and went past the line."""
    text = (
        "".join(f"row {i}\n" for i in range(1, 12000))
        + "😀" * 300
        + " needle\n"
        + "".join(f"row {i}\n" for i in range(12001, 12100))
    )
    for cap in (40, 42, 50, 52, 60):
        p, page, out = _recalled_once(cap, text, {"grep": "needle"})
        assert page.startswith("12000:😀"), (cap, page[:40])
        assert "the match in line 12000 shown in part" in page
        assert p.apply(out.request).request == out.request


def test_a_grep_answer_numbering_its_line_with_over_4300_digits_is_paged_as_its_own() -> None:
    """A recall answer in the request is input like any other: one whose first line
    began with 5,000 digits and a colon made ``int`` raise a bare ValueError out of apply;
    it is paged as an original of its own (no line number read from it)."""
    cfg = {
        "context_window": 200_000,
        "recall": {"enabled": True, "max_tokens": 100},
        "tools": {"recall": {"max_tokens": 100}},
    }
    answer = "9" * 5000 + ":needle\n" + "".join(f"{i}:needle too\n" for i in range(1, 200))
    body = agent_body([[("recall", {"handle": "r-0123456789abcdef", "grep": "needle"}, answer)]])
    out = ctxwin.load_policy(cfg).apply(body)
    sent = [b for m in out.conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert "matching lines shown" not in sent[-1].text
    assert [e.note for e in out.report.edits] == ["paged by lines"]


def test_a_page_of_eight_tokens_of_a_line_is_told_as_its_own() -> None:
    """The review of 94ab881: the part before the notice was counted with its line break,
    so a grep page whose part is 8 tokens (a line number of seven digits, a character of
    four tokens) was paged again when sent again, with a second cap edit."""
    from types import SimpleNamespace

    from ctxwin.steps._recall import Asked, page

    cfg = {
        "context_window": 200_000,
        "window": {"strategy": "threshold"},
        "recall": {"enabled": True, "max_tokens": 24},
        "tools": {"recall": {"max_tokens": 24}},
    }
    p = ctxwin.load_policy(cfg)
    ctx: Any = SimpleNamespace(counter=p.counter, count=p.counter.count)
    h = "r-0123456789abcdef"
    text = "1234567:" + "𒀱" * 300 + " needle\n1234599:needle too\n"
    sent, fits = page(text, 24, "head", Asked(h, grep=True), ctx)
    assert not fits
    assert sent.startswith("1234567:𒀱\n[the match in line 1234567 shown in part")
    body = agent_body([[("recall", {"handle": h, "grep": "needle"}, sent)]])
    out = ctxwin.load_policy(cfg).apply(body)
    assert out.request == body
    assert out.report.edits == ()
