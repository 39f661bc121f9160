"""The house in layers: imports point down only, no module is in an import circle, and no
module or function outgrows what a reader can hold (``python tests/test_layers.py`` prints
the layers).

Imports are read with ``ast``: module-level and function-level, except those under
``if TYPE_CHECKING:`` (annotations only, never run).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ctxwin"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("ctxwin._version", "ctxwin._exceptions", "ctxwin._lazy"),
    ("ctxwin._core",),
    ("ctxwin.stores",),
    ("ctxwin.tokens",),
    ("ctxwin.formats",),
    ("ctxwin._policy",),
    ("ctxwin.steps",),
    ("ctxwin._report", "ctxwin._layout", "ctxwin._optimum", "ctxwin._optimum_states"),
    ("ctxwin._validate", "ctxwin._feedback"),
    ("ctxwin._result", "ctxwin._engine", "ctxwin._entry", "ctxwin._args"),
    ("ctxwin.replay", "ctxwin.testing", "ctxwin.tune", "ctxwin._tune_traces", "ctxwin._tune_files"),
    ("ctxwin.summarizers", "ctxwin.integrations"),
    ("ctxwin._cli", "ctxwin.__main__"),
    ("ctxwin",),
)
"""Bottom to top. A module may import from its own layer (without a circle) and below."""

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> int:
    best = (-1, -1)
    for i, group in enumerate(LAYERS):
        for prefix in group:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[1]:
                best = (i, len(prefix))
    assert best[0] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ctxwin modules ``module`` imports at run time."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        out.update(t for t in targets if t == "ctxwin" or t.startswith("ctxwin."))
    out.discard(module)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def test_every_import_points_down_or_across_its_own_layer() -> None:
    upward = [
        f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
        for m, targets in graph().items()
        for t in sorted(targets)
        if layer_of(t) > layer_of(m)
    ]
    assert upward == []


def test_no_module_is_in_an_import_circle() -> None:
    g = graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                circles.append([*path[path.index(t) :], t])
            elif t in g and state.get(t) is None:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert circles == []


def test_every_module_says_what_it_exports() -> None:
    missing = [
        m
        for m, p in modules().items()
        if m != "ctxwin.__main__"
        and not any(
            isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
            for n in ast.parse(p.read_text(encoding="utf-8")).body
        )
    ]
    assert missing == []


def test_no_module_or_function_is_too_long() -> None:
    too_long = []
    for m, p in modules().items():
        text = p.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{m}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_long.append(f"{m}.{node.name}: {n} lines")
    assert too_long == []


def test_the_core_never_looks_an_adapter_up() -> None:
    """The core takes the format's rules and describer as data."""
    for m, targets in graph().items():
        if m.startswith("ctxwin._core"):
            assert not any(t.startswith(("ctxwin.formats", "ctxwin.steps")) for t in targets), m


def main() -> None:
    g = graph()
    for i, group in enumerate(LAYERS):
        members = sorted(m for m in g if layer_of(m) == i)
        lines = sum(modules()[m].read_text(encoding="utf-8").count("\n") for m in members)
        print(f"layer {i:2}  {', '.join(group):45} {len(members):3} modules {lines:6} lines")
    edges = sum(len(t) for t in g.values())
    print(f"{len(g)} modules, {edges} imports between them, all pointing down or across")


if __name__ == "__main__":
    sys.path.insert(0, str(PACKAGE.parent))
    main()
