"""Each example policy does what its comment says, on results of our own making."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from tests.builders import asst, call, user
from tests.builders import tool as tool_msg

REPO = Path(__file__).resolve().parents[1]
AIRLINE = ctxwin.load_policy(REPO / "policies" / "airline", format="openai-chat")
CODING = ctxwin.load_policy(REPO / "policies" / "coding", format="openai-chat")

FLIGHT = {
    "flight_number": "HAT001",
    "origin": "JFK",
    "destination": "SEA",
    "date": "2024-05-20",
    "scheduled_departure_time_est": "06:00:00",
    "scheduled_arrival_time_est": "12:00:00",
    "status": "available",
    "available_seats": {"economy": 3},
    "prices": {"economy": 120},
}


def edited(policy: ctxwin.Policy, tool: str, content: str) -> str:
    """The result of one call to ``tool`` as the policy sends it (the latest round)."""
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": content},
        ]
    }
    out: Any = policy.apply(body).request
    return str(out["messages"][2]["content"])


def test_user_details_keep_what_an_agent_acts_on() -> None:
    user = {
        "name": {"first_name": "Mia", "last_name": "Li"},
        "address": {"city": "Austin"},
        "email": "mia@example.com",
        "dob": "1990-04-05",
        "payment_methods": {"gift_card_1": {"source": "gift_card", "amount": 50}},
        "saved_passengers": [],
        "membership": "gold",
        "reservations": ["ABC123"],
    }
    kept = json.loads(edited(AIRLINE, "get_user_details", json.dumps(user)))
    assert set(kept) == {
        "name",
        "dob",
        "membership",
        "payment_methods",
        "saved_passengers",
        "reservations",
    }


def test_direct_flights_drop_what_the_call_already_says_and_keep_key_names() -> None:
    kept = json.loads(edited(AIRLINE, "search_direct_flight", json.dumps([FLIGHT])))
    assert kept == [{k: v for k, v in FLIGHT.items() if k not in ("origin", "destination", "date")}]


def test_one_stop_options_keep_both_legs() -> None:
    kept = json.loads(edited(AIRLINE, "search_onestop_flight", json.dumps([[FLIGHT, FLIGHT]])))
    assert len(kept) == 1 and len(kept[0]) == 2  # noqa: PT018 - one shape
    assert kept[0][0]["flight_number"] == "HAT001"
    assert "status" not in kept[0][0]


def test_selections_are_stable_when_applied_twice() -> None:
    once = edited(AIRLINE, "search_direct_flight", json.dumps([FLIGHT]))
    assert edited(AIRLINE, "search_direct_flight", once) == once


def test_codex_shell_output_becomes_plain_text_with_its_exit_code() -> None:
    output = json.dumps(
        {"output": "line 1\nline 2\n", "metadata": {"exit_code": 1, "duration_seconds": 0.2}}
    )
    assert edited(CODING, "shell", output) == "line 1\nline 2\n\n[exit code 1]"


def test_file_reads_keep_their_start_and_say_how_to_read_more() -> None:
    text = "\n".join(f"{i:5d}  x = {i}" for i in range(5000))
    kept = edited(CODING, "Read", text)
    assert kept.startswith("    0  x = 0\n")
    assert kept.endswith(
        "more tokens of this file not shown; read it with an offset to see them ...]"
    )


def test_bash_keeps_both_ends() -> None:
    text = "\n".join(f"step {i}" for i in range(5000)) + "\nFAILED: 1 error"
    kept = edited(CODING, "Bash", text)
    assert kept.startswith("step 0\n")
    assert kept.endswith("FAILED: 1 error")


@pytest.mark.parametrize("tool", ["Grep", "grep_search", "Glob", "glob", "find", "find_file"])
def test_search_results_keep_their_first_matches(tool: str) -> None:
    """search.yaml said it covers Grep, Glob and find, but its one pattern matched only the
    grep tools: Claude Code's Glob and SWE-agent's find_file kept both ends at 4000 tokens."""
    text = "\n".join(f"src/pkg{i}/module_{i}.py" for i in range(3000))
    kept = edited(CODING, tool, text)
    assert kept.startswith("src/pkg0/module_0.py\n")
    assert "src/pkg2999/module_2999.py" not in kept  # the head, not both ends
    assert ctxwin.get_counter("o200k_base").count(kept) < 1600


@pytest.mark.parametrize(
    ("folder", "tool", "payload"),
    [
        ("airline", "search_direct_flight", json.dumps([FLIGHT])),
        ("airline", "search_onestop_flight", json.dumps([[FLIGHT, FLIGHT]])),
        (
            "coding",
            "shell",
            json.dumps({"output": "ok\n", "metadata": {"exit_code": 0, "duration_seconds": 1}}),
        ),
    ],
)
def test_selections_applied_again_are_not_noted(folder: str, tool: str, payload: str) -> None:
    """What a selection wrote passes the same selection again without an edit or a note."""
    path = REPO / "policies" / folder
    body = {"messages": [user("go"), asst(call("c1", tool)), tool_msg("c1", payload)]}
    first = ctxwin.load_policy(path).apply(body, format="openai-chat")
    assert first.report.edits
    again = ctxwin.load_policy(path).apply(first.request, format="openai-chat")
    assert (again.request, again.report.edits) == (first.request, ())
