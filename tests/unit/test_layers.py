"""Dependencies point inward: core <- store <- runtime <- cli, server, demos.

Every module is checked by the package it lives in, so a new module cannot slip past: the test
fails for a top-level module it does not know, and for any import that points outward.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import perdure

SRC = Path(perdure.__file__).parent

# What each layer may import from perdure (besides itself). The top-level modules are the public
# face (``perdure/__init__``, ``__main__``) and the test helpers, which may use everything.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "store": {"core"},
    "runtime": {"core", "store"},
    "cli": {"core", "store", "runtime", "demos", "testing", "drills", "server"},
    "demos": {"core", "store", "runtime", "cli", "providers"},
    "server": {"core", "store", "runtime"},
    "testing": {"core", "store", "runtime"},
    "drills": {"core", "store", "runtime", "testing"},
    "__init__": {"core", "runtime"},
    "__main__": {"cli"},
    "providers": {"core"},
    "langgraph": {"core", "store", "runtime"},
}
PURE_CORE_FORBIDDEN = {"sqlite3", "psycopg", "psycopg_pool", "socket", "subprocess", "urllib"}


def layer_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports_of(path: Path) -> set[str]:
    """Top-level modules imported by a file, as ``perdure.<layer>`` layers or plain names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = (
                [node.module]
                if node.module != "perdure"
                else [f"perdure.{a.name}" for a in node.names]
            )
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            found.add(
                f"perdure.{parts[1]}" if parts[0] == "perdure" and len(parts) > 1 else parts[0]
            )
    return found


MODULES = sorted(p for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_every_module_imports_only_inner_layers(path: Path) -> None:
    layer = layer_of(path)
    assert layer in ALLOWED, f"{path.name} is in no known layer: place it in a subpackage"
    outward = {
        name
        for name in imports_of(path)
        if name.startswith("perdure.") and name[len("perdure.") :] not in ALLOWED[layer] | {layer}
    }
    assert not outward, f"{path.relative_to(SRC)} imports {sorted(outward)} from an outer layer"


@pytest.mark.parametrize(
    "path", [p for p in MODULES if layer_of(p) == "core"], ids=lambda p: p.name
)
def test_the_core_does_no_io(path: Path) -> None:
    assert not imports_of(path) & PURE_CORE_FORBIDDEN, path.name


def test_only_the_store_speaks_sql() -> None:
    # the demos' light and ledger are simulated external systems with databases of their own
    for path in MODULES:
        if layer_of(path) not in {"store", "demos"}:
            assert not imports_of(path) & {"sqlite3", "psycopg", "psycopg_pool"}, path.name


def test_a_bare_import_of_perdure_never_imports_langgraph() -> None:
    import subprocess
    import sys

    code = (
        "import sys, perdure; print('langgraph' in sys.modules or 'langchain_core' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
