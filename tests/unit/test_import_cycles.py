"""No import cycle between perdure's own modules, counting every kind of import.

An import under ``if TYPE_CHECKING:`` or inside a function still ties two modules together; it
only hides the cycle from the interpreter. So the graph here has an edge for each of them, and
the test names every cycle with the imports that close it. Lazy imports of optional packages
(psycopg, boto3, the server's and providers' libraries) are not perdure's modules and add no
edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import perdure

SRC = Path(perdure.__file__).parent


def module_name(path: Path) -> str:
    parts = ["perdure", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def imported(node: ast.AST, importer: str) -> list[str]:
    """The perdure modules one import statement names (a ``from X import Y`` names ``X.Y`` when
    that is a module, else ``X``), resolving relative imports."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = importer.split(".")
            if MODULES[importer].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
        names = subs or [base]
    else:
        return []
    found = []
    for name in names:
        module = name
        while module and module not in MODULES:
            module = module.rpartition(".")[0]
        if module and module != importer:
            found.append(module)
    return found


def graph() -> dict[str, set[str]]:
    return {
        mod: {t for node in ast.walk(ast.parse(path.read_text())) for t in imported(node, mod)}
        for mod, path in MODULES.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_the_graph_sees_imports_of_every_kind() -> None:
    # a cycle hidden under TYPE_CHECKING or in a function must still count
    edges = graph()
    assert "perdure.runtime.step.host" in edges["perdure.runtime.step.context"]
    assert "perdure.core.budget" in edges["perdure.runtime.admin.versions"]  # TYPE_CHECKING
    assert "perdure.cli.watch" in edges["perdure.cli.main"]  # inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_perdure_imports_itself_back() -> None:
    edges = graph()
    found = cycles(edges)
    closing = [
        f"{', '.join(group)}: {sorted((a, b) for a in group for b in edges[a] if b in group)}"
        for group in found
    ]
    assert not found, "import cycles:\n" + "\n".join(closing)
