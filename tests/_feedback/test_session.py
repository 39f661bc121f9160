"""Sessions: predicted against reported, request by request."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxwin
from ctxwin.formats import get_adapter
from ctxwin.testing import FakeCounter, agent_body
from ctxwin.tokens._meter import TokenMeter

POLICY: dict[str, Any] = {
    "context_window": 3000,
    "window": {"trigger": 0.6, "target": 0.3},
    "pricing": "anthropic",
    "cache_breakpoints": "auto",
}


class FakeProvider:
    """Counts like ctxwin (words) and caches the longest prefix of messages it saw before;
    the rest it writes to the cache (the policy marks the last message), and says so."""

    def __init__(self, *, caches: bool = True) -> None:
        self.caches = caches
        self.previous: list[str] = []

    def usage(self, request: dict[str, Any]) -> dict[str, int]:
        adapter = get_adapter("anthropic")
        conv = ctxwin.parse(request, "anthropic")
        meter = TokenMeter(FakeCounter(), adapter.overheads)
        items = [json.dumps(adapter.unmarked(m), sort_keys=True) for m in request["messages"]]
        shared = 0
        for a, b in zip(items, self.previous, strict=False):
            if a != b:
                break
            shared += 1
        total = meter.conversation(conv)
        cached = (
            meter.envelope(conv) + sum(meter.message(m) for m in conv.messages[:shared])
            if shared
            else 0
        )
        self.previous = items
        cached = cached if self.caches and cached >= 1024 else 0  # Anthropic's minimum prefix
        writes = total - cached if self.caches else 0
        return {
            "input_tokens": total - cached - writes,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": writes,
        }


def run(provider: FakeProvider) -> ctxwin.Session:
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 120))] for r in range(24)]
    body = agent_body(uses, format="anthropic")
    session = ctxwin.Policy(POLICY, counter=FakeCounter(), format="anthropic").session()
    for t in range(3, len(body["messages"]) + 1, 2):
        result = session.apply({**body, "messages": body["messages"][:t]})
        session.observe(result, {"usage": provider.usage(result.request)})  # type: ignore[arg-type]
    return session


def test_predicted_and_reported_agree_on_an_honest_provider() -> None:
    session = run(FakeProvider())
    t = session.totals()
    assert t["requests"] == t["reported_requests"] == 24
    assert t["predicted_input"] == t["reported_input"]
    assert t["predicted_cached"] == t["reported_cached"] > 0
    assert t["predicted_cost"] == t["reported_cost"]
    assert t["notes"] == []
    assert session.policy.calibration.of(None).ratio == 1.0  # ctxwin counts as it does


def test_a_provider_that_caches_nothing_is_called_out() -> None:
    session = run(FakeProvider(caches=False))
    (note,) = session.totals()["notes"]
    assert "broke the prompt cache" in note
    assert "note: the provider's cache reads (0 tokens)" in session.to_text()
    data = json.loads(session.to_json())
    assert data["kind"] == "session"
    assert len(data["requests"]) == 24
    assert "| request |" in session.to_markdown()


def test_a_changed_system_prompt_is_predicted_to_read_nothing_from_the_cache() -> None:
    """The provider's cache keys start with the system prompt and the tools: a prompt
    naming the day (changed every request) reads nothing, and ctxwin predicted the whole
    message prefix as read, then blamed "a breakpoint, a TTL or a reordering"."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format="anthropic")
    policy = ctxwin.Policy({"pricing": "anthropic"}, counter=FakeCounter(), format="anthropic")
    session, same = policy.session(), policy.session()
    for t, day in ((5, "Monday"), (7, "Tuesday")):
        for s, system in ((session, f"Today is {day}."), (same, "Today.")):
            s.apply({**body, "system": system, "messages": body["messages"][:t]})
    assert same.records[1].predicted_cached > 1024  # the guard: read when nothing changed
    assert not same.records[1].envelope_changed
    assert session.records[1].predicted_cached == 0
    assert session.records[1].envelope_changed
    (note,) = session.totals()["notes"]
    assert note.startswith("1 request(s) (1) changed the system prompt")
    assert same.totals()["notes"] == []


def _lead(fmt: str, role: str, text: str) -> dict[str, Any]:
    if fmt == "openai-responses":
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
    return {"role": role, "content": text}


@pytest.mark.parametrize(
    ("fmt", "role"),
    [
        ("openai-chat", "system"),
        ("openai-chat", "developer"),
        ("openai-responses", "system"),
        ("openai-responses", "developer"),
    ],
)
def test_a_changed_system_message_is_a_changed_envelope(fmt: Any, role: str) -> None:
    """Where the system prompt is a message (OpenAI Chat, a Responses input item), only the
    tools were compared: a prompt naming the day was never noted, as it is for Anthropic."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format=fmt)
    key = "messages" if fmt == "openai-chat" else "input"
    rest = [m for m in body[key] if m.get("role") not in ("system", "developer")]
    policy = ctxwin.Policy({"pricing": "openai"}, counter=FakeCounter(), format=fmt)
    session, same = policy.session(), policy.session()
    for t, day in ((6, "Monday"), (8, "Tuesday")):
        for s, system in ((session, f"Today is {day}."), (same, "Today.")):
            s.apply({**body, key: [_lead(fmt, role, system), *rest[:t]]})
    assert same.records[1].predicted_cached > 1024  # the guard: read when nothing changed
    assert not same.records[1].envelope_changed
    assert session.records[1].envelope_changed
    assert session.records[1].predicted_cached == 0
    (note,) = session.totals()["notes"]
    assert note.startswith("1 request(s) (1) changed the system prompt")


def test_a_system_message_changed_in_place_is_a_changed_envelope() -> None:
    """Its text parts edited in place: the same objects, not the same prompt."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format="openai-chat")
    system = {"role": "system", "content": [{"type": "text", "text": "Today is Monday."}]}
    rest = body["messages"][1:]
    policy = ctxwin.Policy({"pricing": "openai"}, counter=FakeCounter(), format="openai-chat")
    session = policy.session()
    session.apply({**body, "messages": [system, *rest[:4]]})
    system["content"][0]["text"] = "Today is Tuesday."
    session.apply({**body, "messages": [system, *rest[:6]]})
    assert session.records[1].envelope_changed


def test_tools_changed_in_place_are_a_changed_envelope() -> None:
    """The session kept the caller's own tool list: appended to in place, it compared
    equal to itself, and cache reads were still predicted (review of aac9650)."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format="anthropic")
    tools: list[dict[str, Any]] = [{"name": "read0", "input_schema": {"type": "object"}}]
    policy = ctxwin.Policy({"pricing": "anthropic"}, counter=FakeCounter(), format="anthropic")
    session = policy.session()
    session.apply({**body, "tools": tools, "messages": body["messages"][:5]})
    tools.append({"name": "read1", "input_schema": {"type": "object"}})
    session.apply({**body, "tools": tools, "messages": body["messages"][:7]})
    assert session.records[1].envelope_changed
    assert session.records[1].predicted_cached == 0


def _schema(*, param: str = "path") -> dict[str, Any]:
    number = {"type": "number", "default": 0.7, "maximum": 100_000}
    props = {"temperature": number, param: {"type": "string", "maxLength": 1000}}
    tool = {"name": "read0", "input_schema": {"type": "object", "properties": props}}
    return json.loads(json.dumps(tool))  # as a proxy reads each request: numbers afresh


@pytest.mark.parametrize(
    ("second", "changed"),
    [
        (lambda tools: [_schema()], False),  # built afresh, equal: floats and ints over 256
        (lambda tools: tools, False),
        (lambda tools: [_schema(param="file")], True),
        (lambda tools: [{**t, "description": "d"} for t in tools], True),
    ],
)
def test_the_tools_are_compared_by_value(second: Any, changed: bool) -> None:
    """A review of 8ec41a6 found tools rebuilt for each request (a proxy's JSON body) told
    apart by the identity of their numbers (``"default": 0.7``): every request after the
    first was predicted to read nothing from the cache."""
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format="anthropic")
    policy = ctxwin.Policy({"pricing": "anthropic"}, counter=FakeCounter(), format="anthropic")
    session, tools = policy.session(), [_schema()]
    session.apply({**body, "tools": tools, "messages": body["messages"][:5]})
    session.apply({**body, "tools": second(tools), "messages": body["messages"][:7]})
    assert session.records[1].envelope_changed is changed
    assert (session.records[1].predicted_cached > 1024) is not changed


def test_a_parameter_renamed_in_place_is_a_changed_envelope() -> None:
    uses = [[(f"read{r}", {"path": f"f{r}.py"}, " ".join(["w"] * 600))] for r in range(3)]
    body = agent_body(uses, format="anthropic")
    policy = ctxwin.Policy({"pricing": "anthropic"}, counter=FakeCounter(), format="anthropic")
    session, tools = policy.session(), [_schema()]
    session.apply({**body, "tools": tools, "messages": body["messages"][:5]})
    props = tools[0]["input_schema"]["properties"]
    props["file"] = props.pop("path")  # its value kept, and last: a snapshot misses it
    session.apply({**body, "tools": tools, "messages": body["messages"][:7]})
    assert session.records[1].envelope_changed


def one_request() -> tuple[ctxwin.Session, ctxwin.Result]:
    session = ctxwin.Policy(
        {"pricing": "anthropic"}, counter=FakeCounter(), format="anthropic"
    ).session()
    body = agent_body([[("read", {"path": "a.py"}, "w " * 300)]], format="anthropic")
    return session, session.apply(body)


def test_the_reported_cost_bills_as_writes_only_what_the_provider_wrote() -> None:
    """Uncached input the provider did not write costs 1, not the write price (1.25)."""
    session, result = one_request()
    n = result.tokens
    usage = {"input_tokens": n - 100, "cache_creation_input_tokens": 100}
    session.observe(result, usage)
    assert session.totals()["reported_cost"] == round(n - 100 + 1.25 * 100, 1)


def test_a_result_dropped_unobserved_leaves_nothing_behind() -> None:
    """Pending results were held by id: the entry outlived the result, and a later result
    given the same id (CPython reuses them) took its usage to the wrong record."""
    import gc

    session, result = one_request()
    assert len(session._pending) == 1
    del result
    gc.collect()
    assert len(session._pending) == 0


@pytest.mark.parametrize("where", ["input", "content"])
def test_a_message_changed_in_place_down_its_nesting_is_not_read_from_the_cache(
    where: str,
) -> None:
    """The session keeps the request before as it was (snapshots), not as shallow copies whose
    nested parts are the caller's: a call's arguments or a result's text block changed in
    place is where the provider's cached prefix ends, as with a history sent as a copy."""
    words = " ".join(f"word{i}" for i in range(400))

    def history() -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Task: " + words}]
        for r in range(4):
            call = {"type": "tool_use", "id": f"c{r}", "name": "read", "input": {"path": f"f{r}"}}
            result = [{"type": "text", "text": f"file {r} {words}"}]
            messages.append({"role": "assistant", "content": [call]})
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"c{r}", "content": result}],
                }
            )
        return {"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": messages}

    def second_prediction(copy_first: bool, change: bool = True) -> int:
        session = ctxwin.Policy({"context_window": 200_000}).session()
        body = history()
        session.apply(json.loads(json.dumps(body)) if copy_first else body)
        if not change:
            pass
        elif where == "input":
            body["messages"][3]["content"][0]["input"]["path"] = "renamed"
        else:
            body["messages"][4]["content"][0]["content"][0]["text"] = "file 1 was changed"
        body["messages"].append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c9", "name": "read", "input": {}}],
            }
        )
        body["messages"].append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c9", "content": "ok"}],
            }
        )
        session.apply(body)
        return session.records[-1].predicted_cached

    sent_as_copy = second_prediction(copy_first=True)
    assert 0 < sent_as_copy < second_prediction(copy_first=True, change=False)
    assert second_prediction(copy_first=False) == sent_as_copy


@pytest.mark.parametrize(
    ("fmt", "second", "same"),
    [
        ("anthropic", 1000, True),
        ("anthropic", 1000.0, False),
        ("gemini", 1000, True),
        ("gemini", True, False),
    ],
)
def test_a_request_rebuilt_from_json_shares_what_the_same_objects_share(
    fmt: ctxwin.FormatName, second: object, same: bool
) -> None:
    """A proxy's requests are new objects each time, their numbers too (1000, 0.5): equal to
    the request before, they are read from the cache as the same objects would be; a number
    sent otherwise (1000.0, True for 1000) ends the cached prefix there."""
    words = " ".join(f"word{i}" for i in range(600))
    uses = [[("search", {"q": "x", "limit": 1000, "t": 0.5}, words)], [("read", {}, "ok")]]

    def predicted(rebuilt: bool, limit: object = 1000) -> int:
        session = ctxwin.Policy({"context_window": 200_000}).session()
        full = agent_body(uses, format=fmt)
        key = "messages" if fmt == "anthropic" else "contents"
        first = {**full, key: full[key][: len(agent_body(uses[:1], format=fmt)[key])]}
        if rebuilt:
            sent = json.dumps(full).replace('"limit": 1000,', f'"limit": {json.dumps(limit)},')
            first, full = json.loads(json.dumps(first)), json.loads(sent)
        for body in (first, full):
            session.apply(body, format=fmt)
        return session.records[-1].predicted_cached

    kept = predicted(rebuilt=False)
    assert kept > 0
    assert (predicted(rebuilt=True, limit=second) == kept) is same
