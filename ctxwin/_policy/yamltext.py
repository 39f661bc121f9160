"""Reading YAML text safely: bounded, strict, and every refusal at its line.

``yaml.SafeLoader`` cannot run code, but it still accepts what a policy file should not
hold: duplicate keys (the last silently wins), nesting deep enough to exhaust Python's
stack, and aliases that expand a few hundred bytes into billions of nodes ("billion
laughs"). :func:`parse_yaml` refuses all three while composing, before anything is built
from the document, and names the line. Errors quote values through :func:`excerpt`, which
never renders more than a short prefix, however large (or shared) the value is.
"""

from __future__ import annotations

import reprlib
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_NODES",
    "YamlRefusal",
    "excerpt",
    "parse_yaml",
]

MAX_DEPTH = 64
"""The deepest nesting a policy file may have (a real one has about 5 levels)."""
MAX_ALIASES = 1000
"""The most alias uses (``*name``) in one file."""
MAX_NODES = 100_000
"""The most nodes a file may hold once its aliases are expanded."""

_MERGE = "tag:yaml.org,2002:merge"


class YamlRefusal(yaml.MarkedYAMLError):
    """A document ctxwin refuses to build (too deep, too large, duplicate keys)."""


_repr = reprlib.Repr()
_repr.maxlevel = 2
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlong = 60
for _attr in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
    setattr(_repr, _attr, 4)


def excerpt(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to at most about ``limit`` characters, computed without ever
    rendering the whole value (a policy's value may be huge or expand through aliases)."""
    text = _repr.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Loader(yaml.SafeLoader):
    """The safe loader, bounded: depth, alias uses and duplicate keys checked as it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlRefusal(
                    problem=f"more than {MAX_ALIASES} aliases",
                    problem_mark=self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlRefusal(
                problem=f"nested deeper than {MAX_DEPTH} levels",
                problem_mark=self.peek_event().start_mark,  # type: ignore[no-untyped-call]
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> MappingNode:  # stubs: anchor: str | None
        node: MappingNode = super().compose_mapping_node(anchor)
        first: dict[tuple[str, str], Node] = {}
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == _MERGE:
                continue
            seen = first.setdefault((key.tag, key.value), key)
            if seen is not key:
                raise YamlRefusal(
                    problem=f"duplicate key {excerpt(key.value)} "
                    f"(first on line {seen.start_mark.line + 1})",
                    problem_mark=key.start_mark,
                )
        return node


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: Node) -> None:
    """Refuse a document whose aliases expand past :data:`MAX_NODES` or :data:`MAX_DEPTH`,
    or refer to themselves. Each distinct node is visited once (the sizes are memoized), so
    this is linear in the file however much it would expand."""
    done: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, expanded depth)
    open_: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            parts = [done[id(c)] for c in _children(node)]
            size = 1 + sum(p[0] for p in parts)
            depth = 1 + max((p[1] for p in parts), default=0)
            if size > MAX_NODES:
                raise YamlRefusal(
                    problem=f"its aliases expand to more than {MAX_NODES} nodes",
                    problem_mark=node.start_mark,
                )
            if depth > MAX_DEPTH:
                raise YamlRefusal(
                    problem=f"its aliases nest deeper than {MAX_DEPTH} levels",
                    problem_mark=node.start_mark,
                )
            done[key] = (size, depth)
            continue
        if key in done:
            continue
        if key in open_:
            raise YamlRefusal(problem="an alias refers to itself", problem_mark=node.start_mark)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(_children(node)) if id(c) not in done)


def parse_yaml(text: str) -> tuple[object, Node | None]:
    """The data of a one-document YAML text and its node tree (for lines).

    Raises ``yaml.YAMLError`` (a :class:`YamlRefusal` for what ctxwin refuses on purpose).
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_expansion(node)
        return loader.construct_document(node), node
    finally:
        loader.dispose()
