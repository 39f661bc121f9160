"""Wire formats: one adapter module each, and detection.

``get_adapter(name)`` returns the adapter of a format; ``detect(body)`` says which format a
body is in, or raises :class:`~ctxwin.FormatError` naming the candidates when it cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ctxwin._core.conversation import Conversation
from ctxwin._core.jsontext import long_int_words
from ctxwin._core.model import FORMATS, FormatName
from ctxwin._exceptions import CtxwinError, FormatError, InputError
from ctxwin.formats._base import Adapter, json_type
from ctxwin.formats._objects import TooDeep, Unreadable, plain

__all__ = ["FORMATS", "Adapter", "adapter_of", "detect", "get_adapter"]

_MODULES: dict[str, tuple[str, str]] = {
    "openai-chat": ("ctxwin.formats.openai_chat", "OpenAIChatAdapter"),
    "anthropic": ("ctxwin.formats.anthropic", "AnthropicAdapter"),
    "openai-responses": ("ctxwin.formats.openai_responses", "OpenAIResponsesAdapter"),
    "gemini": ("ctxwin.formats.gemini", "GeminiAdapter"),
}
_ADAPTERS: dict[str, Adapter] = {}


def get_adapter(name: str | Adapter) -> Adapter:
    """The adapter of a format name (``openai-chat``, ``anthropic``, ``openai-responses``,
    ``gemini``); an adapter instance is returned as it is."""
    if isinstance(name, Adapter):
        return name
    adapter = _ADAPTERS.get(name)
    if adapter is not None:
        return adapter
    if name not in _MODULES:
        raise FormatError(
            f"unknown format {name!r}; expected one of: {', '.join(FORMATS)}", format=name
        )
    import importlib

    module, cls = _MODULES[name]
    new: Adapter = getattr(importlib.import_module(module), cls)()
    _ADAPTERS[name] = new
    return new


def adapter_of(conversation: Conversation) -> Adapter:
    """The adapter that parsed ``conversation`` (a variant's own: it renders and counts as
    the variant), else its format's."""
    found = conversation.adapter
    return found if isinstance(found, Adapter) else get_adapter(conversation.format)


_CONTAINERS = ("messages", "input", "contents")


def _all_mappings(items: list[object]) -> bool:
    """Whether every item is a mapping: plain dicts told at C speed first."""
    return set(map(type, items)) <= {dict} or all(isinstance(x, Mapping) for x in items)


def _plain_lists(body: object) -> tuple[object, str | None]:
    """``body`` with SDK objects in its message list as dicts (for judging its shape), and
    where the first item that cannot be read stands."""
    unreadable: str | None = None

    def convert(items: list[object], where: str) -> list[object]:
        nonlocal unreadable
        out = []
        for i, item in enumerate(items):
            try:
                out.append(plain(item, _response_object))
            except (Unreadable, TooDeep) as e:
                if unreadable is None and isinstance(e, Unreadable) and e.long:
                    unreadable = f"{where.strip()}[{i}] holds {long_int_words()}"
                elif unreadable is None:
                    what = e.type_name() if isinstance(e, Unreadable) else "deep data"
                    unreadable = f"{where.strip()}[{i}] is a {what}, which ctxwin cannot read"
                out.append(item)
        return out

    if isinstance(body, list):
        return convert(body, "item "), unreadable
    if isinstance(body, Mapping):
        changed = {
            k: convert(body[k], k)
            for k in _CONTAINERS
            if isinstance(body.get(k), list) and not _all_mappings(body[k])
        }
        return ({**body, **changed} if changed else body), unreadable
    return body, None


def _response_object(data: dict[str, object]) -> dict[str, object]:
    """A response object in a history, as a message (an Anthropic ``Message`` carries its
    id, model, usage...; the others are messages already)."""
    return get_adapter("anthropic").from_object(data)


_MODEL_HINTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("claude",), ("anthropic",)),
    (("gemini", "models/gemini"), ("gemini",)),
    (("gpt", "chatgpt", "o1", "o3", "o4", "codex"), ("openai-chat", "openai-responses")),
)


def _by_model(body: object, candidates: list[FormatName]) -> FormatName | None:
    """The one candidate the body's ``model`` names (``claude-*`` is Anthropic...)."""
    model = body.get("model") if isinstance(body, Mapping) else None
    if not isinstance(model, str):
        return None
    low = model.lower()
    for prefixes, formats in _MODEL_HINTS:
        if low.startswith(prefixes):
            named = [c for c in candidates if c in formats]
            return named[0] if len(named) == 1 else None
    return None


def detect(body: object) -> FormatName:
    """The format of a request body or bare message list, judged by its shape (and, when
    the shape fits several, by the ``model`` it names)."""
    body, unreadable = _plain_lists(body)
    scores = {name: get_adapter(name).detect(body) for name in FORMATS}
    sure = [n for n, s in scores.items() if s == 2]
    maybe = [n for n, s in scores.items() if s >= 1]
    if len(sure) == 1:
        return sure[0]
    if not sure and len(maybe) == 1:
        return maybe[0]
    candidates = sure or maybe
    hinted = _by_model(body, candidates)
    if hinted is not None:
        return hinted
    if unreadable is not None:
        raise FormatError(
            f"cannot tell the wire format: {unreadable}: pass the messages as dicts "
            "(for a pydantic object, its .model_dump())"
        )
    if not candidates:
        raise _undetected(body)
    raise FormatError(
        "the wire format is ambiguous: the body could be "
        + " or ".join(candidates)
        + "; pass format="
        + repr(candidates[0])
        + " (or another) to say which",
        candidates=candidates,
    )


def _undetected(body: object) -> FormatError:
    """Why no format takes ``body``: at the element that is off when one is (``path``:
    ``messages[3]``, ``input[2].role``, ``[1]`` in a bare list), else what it holds."""
    kind = type(body).__name__
    path: str | None = None
    hint = "expected a JSON object with 'messages', 'input' or 'contents', or a list of messages"
    if isinstance(body, Mapping):
        empty = [k for k in _CONTAINERS if body.get(k) in ([], "")]
        lists = [k for k in _CONTAINERS if isinstance(body.get(k), list)]
        others = [k for k in _CONTAINERS if k in body and k not in empty and k not in lists]
        if empty:
            hint = f"its {empty[0]!r} is empty; pass format= to say which format it is"
        elif others and not lists:
            hint = f"its {others[0]!r} must be a list, not {json_type(body[others[0]])}"
        elif lists:
            path, hint = _shape_hint(body, body[lists[0]], lists[0])
        else:
            hint = f"the object has keys {sorted(body)[:8]}; " + hint
    elif isinstance(body, list):
        if body:
            path, hint = _shape_hint(body, body, None)
        else:
            hint = "the message list is empty; pass format= to say which format it is"
    return FormatError(f"cannot tell the wire format of this {kind}: {hint}", path=path)


_PASS = "pass format= to say which format it is"


def _shape_hint(body: object, items: list[object], key: str | None) -> tuple[str | None, str]:
    """Where a message list (``body[key]``, or the bare list ``body``) is off, and what is
    wrong there: the first element no format using that list takes (not an object, no
    role, a role that is no string or none of those formats has), else the element that
    keeps the formats from taking it (:func:`_furthest`). In a bare list an item with a
    ``type`` (a Responses item) or ``parts`` (Gemini content) needs no role."""
    adapters = [a for a in map(get_adapter, FORMATS) if key is None or a.container == key]
    roles = sorted({r for a in adapters for r in a.wire_roles})
    for i, item in enumerate(items):
        at = f"{key or ''}[{i}]"
        if not isinstance(item, Mapping):
            return at, f"a message must be a JSON object, not {json_type(item)}"
        if key is None and ("type" in item or "parts" in item):
            continue
        if "role" not in item:
            nor = "" if key else " (nor the 'type' of a Responses item)"
            return at, f"the message has no 'role'{nor}"
        role = item["role"]
        if not isinstance(role, str):
            return f"{at}.role", f"the role must be a string, not {json_type(role)}"
        if role not in roles:
            return f"{at}.role", f"unknown role {role!r} (known: {', '.join(roles)})"
    found = _furthest(body, items, key, adapters)
    if found is not None:
        return found
    first = items[0]
    keys = sorted(map(str, first))[:6] if isinstance(first, Mapping) else "?"
    holds = f"its {key!r} holds" if key else "the list holds"
    return None, (
        f"{holds} {len(items)} items no format fully matches (the first item has keys "
        f"{keys}); {_PASS}"
    )


def _furthest(
    body: object, items: list[object], key: str | None, adapters: list[Adapter]
) -> tuple[str, str] | None:
    """The element that keeps a format from taking the list. Each format's first element
    it does not take is found (a binary search); one is blamed when the format takes
    every other element, with what its parser says is wrong there. When several formats
    each blame another element, the one a format is sure of the rest for (a marker only
    it has) and else the earliest is said, and the other too. Else the furthest a format
    got is said, or None in a request object no format takes even the first message of
    (its own keys may be what rules them out). Detection's error path only."""

    def listed(part: list[object]) -> object:
        return part if key is None or not isinstance(body, Mapping) else {**body, key: part}

    reach = {a.name: _reach(a, lambda k: listed(items[:k]), len(items)) for a in adapters}
    blamed: list[tuple[int, int, Adapter]] = []  # (-score of the rest, element, format)
    for a in adapters:
        n = reach[a.name]
        score = a.detect(listed(items[:n] + items[n + 1 :]))
        if score:
            blamed.append((-score, n, a))
    if blamed:
        blamed.sort(key=lambda b: b[:2])  # stable: FORMATS order among equals
        _, n, first = blamed[0]
        at = f"{key or ''}[{n}]"
        takers = [a for s, m, a in blamed if m == n]
        why = f"the other messages fit {' and '.join(a.name for a in takers)}, this one does not"
        path, reason = _reason(first, listed(items[: n + 1]), at, key is None)
        if len(takers) == 1 and reason is not None:
            why += f": {reason}"
        else:
            path = at
        other = next(((m, a) for _, m, a in blamed if m != n), None)
        if other is not None:
            why += f" (or, as {other[1].name}, {key or ''}[{other[0]}] is the one that does not)"
        return path, f"{why}; {_PASS}"
    n = max(reach.values(), default=0)
    if n == 0 and key is not None:
        return None
    if n == 0:
        return "[0]", f"no format takes it as the first message; {_PASS}"
    names = " and ".join(a.name for a in adapters if reach[a.name] == n)
    took = "the message" if n == 1 else f"the {n:,} messages"
    return f"{key or ''}[{n}]", f"{names} fit {took} before it, not this one; {_PASS}"


def _reach(adapter: Adapter, prefix: Callable[[int], object], n: int) -> int:
    """How many of the first elements of a list of ``n`` (not all taken) the adapter
    takes: a ``k`` it takes whose ``k + 1`` it does not (detection is per element, so
    that is where it stops)."""
    if not adapter.detect(prefix(1)):
        return 0
    fits, fails = 1, n
    while fails - fits > 1:
        mid = (fits + fails) // 2
        fits, fails = (mid, fails) if adapter.detect(prefix(mid)) else (fits, mid)
    return fits


def _reason(adapter: Adapter, body: object, at: str, bare: bool) -> tuple[str, str | None]:
    """Where in element ``at`` the adapter's parser finds it wrong, and what (None when it
    finds nothing there)."""
    try:
        adapter.parse(body)
    except InputError as e:  # a FormatError, as a rule
        path = e.path
        if path is not None and bare:
            path = path.removeprefix(adapter.container)  # a bare list's element: [3]
        if path is not None and (path == at or path.startswith((at + ".", at + "["))):
            return path, e.reason
    except CtxwinError:
        pass  # detection's own error says the rest
    return at, None
