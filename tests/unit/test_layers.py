"""Dependencies point inward: the pure core does no I/O and imports no outer layer."""

from __future__ import annotations

import ast
from pathlib import Path

import perdure

SRC = Path(perdure.__file__).parent
CORE = {
    "model",
    "transitions",
    "clock",
    "errors",
    "serde",
    "workflow",
    "ids",
    "crashpoints",
    "effects",
    "recovery",
    "retry",
}
OUTER = {"runtime", "worker", "cli", "cli_support", "demo_cli", "render", "executor", "store"}


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perdure"):
            found.add(node.module.split(".")[1] if "." in node.module else "")
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("perdure.")}
    return found


def test_the_core_imports_no_outer_layer() -> None:
    for name in CORE:
        assert not imports_of(SRC / f"{name}.py") & OUTER, name


def test_the_store_imports_only_the_core_and_itself() -> None:
    for path in (SRC / "store").glob("*.py"):
        assert imports_of(path) <= CORE | {"store"}, path.name


def test_the_runtime_never_imports_the_cli() -> None:
    for name in ("runtime", "executor", "worker", "committer", "leases"):
        assert not imports_of(SRC / f"{name}.py") & {"cli", "cli_support", "demo_cli", "render"}


def test_only_the_store_speaks_sql() -> None:
    # the demos' light and ledger are simulated external systems with databases of their own
    for path in SRC.rglob("*.py"):
        if "store" not in path.parts and "demos" not in path.parts:
            assert "import sqlite3" not in path.read_text(), path.name
