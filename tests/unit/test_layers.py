"""Dependencies point inward: core <- store <- runtime <- cli, server, demos; inside the
runtime, its face -> admin, execution -> step.

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
    "cli": {"core", "store", "runtime", "demos", "testing", "drills", "server", "langgraph"},
    "demos": {
        "core",
        "store",
        "runtime",
        "cli",
        "providers",
        "langgraph",
        "pydantic_ai",
        "openai_agents",
    },
    "server": {"core", "store", "runtime"},
    "testing": {"core", "store", "runtime"},
    "drills": {"core", "store", "runtime", "testing"},
    "__init__": {"core", "runtime"},
    "__main__": {"cli"},
    "providers": {"core"},
    "langgraph": {"core", "store", "runtime"},
    "pydantic_ai": {"core", "store", "runtime"},
    "openai_agents": {"core", "store", "runtime"},
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


# The runtime's rooms: the face (what a user holds: Runtime, AsyncRuntime, the worker, its
# supervisor, the fleet) and the plumbing every room shares (event loop thread, clock,
# telemetry, logs, crash points, the artifact service, settings) are modules of runtime/ itself;
# step/, execution/ and admin/ are packages. What each room may import of the runtime:
RUNTIME_FACE = {"__init__", "runtime", "asyncrt", "worker", "supervisor", "forked", "fleet"}
RUNTIME_PLUMBING = {
    "aio",
    "clock",
    "telemetry",
    "logs",
    "crashpoints",
    "artifacts",
    "settings",
    "leases",
    "grouping",
}
ROOMS: dict[str, set[str]] = {
    "face": {"face", "plumbing", "admin", "execution", "step"},
    "plumbing": {"plumbing"},
    "admin": {"admin", "plumbing"},
    "execution": {"execution", "step", "plumbing"},
    "step": {"step"},
}
RUNTIME = SRC / "runtime"


def room_of(module: str) -> str:
    """The room of ``perdure.runtime.<module>...`` (its first part after ``runtime``)."""
    first = module.split(".", maxsplit=1)[0]
    if first in {"step", "execution", "admin"}:
        return first
    if first in RUNTIME_FACE:
        return "face"
    if first in RUNTIME_PLUMBING:
        return "plumbing"
    raise AssertionError(f"runtime/{first} is in no room: add it to RUNTIME_FACE or PLUMBING")


def runtime_imports_of(path: Path) -> set[str]:
    """Modules of the runtime a file imports, as dotted names below ``perdure.runtime``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n[len("perdure.runtime.") :] for n in names if n.startswith("perdure.runtime.")}
    return found


RUNTIME_MODULES = sorted(RUNTIME.rglob("*.py"))


@pytest.mark.parametrize("path", RUNTIME_MODULES, ids=lambda p: str(p.relative_to(RUNTIME)))
def test_every_runtime_module_imports_only_the_rooms_it_may(path: Path) -> None:
    room = room_of(".".join(path.relative_to(RUNTIME).with_suffix("").parts))
    outward = {m for m in runtime_imports_of(path) if room_of(m) not in ROOMS[room]}
    assert not outward, f"runtime/{path.relative_to(RUNTIME)} ({room}) imports {sorted(outward)}"


@pytest.mark.parametrize("path", sorted((RUNTIME / "step").rglob("*.py")), ids=lambda p: p.name)
def test_step_code_sees_only_the_core(path: Path) -> None:
    outward = {n for n in imports_of(path) if n.startswith("perdure.")} - {
        "perdure.core",
        "perdure.runtime",
    }
    assert not outward, f"runtime/step/{path.name} imports {sorted(outward)}"


def test_only_step_code_reads_a_contexts_host() -> None:
    # everything outside runtime/step/ meets a step through the Context's public face
    step = RUNTIME / "step"
    readers = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path in MODULES
        if step not in path.parents
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "_host"
    ]
    assert not readers, f"these read ._host outside runtime/step/: {readers}"


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


# What no module outside its package reaches into: a runtime's execution room (one claimed run;
# the face and its options are the way in) and a store's dialect packages (``open_store`` and
# :mod:`perdure.store.faults` are the way in).
INTERNAL = {
    "perdure.runtime.execution": SRC / "runtime",
    "perdure.store.sqlite": SRC / "store",
    "perdure.store.postgres": SRC / "store",
}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_reaches_into_another_packages_internals(path: Path) -> None:
    reached = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.module
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            for internal, home in INTERNAL.items():
                if (
                    name == internal or name.startswith(internal + ".")
                ) and home not in path.parents:
                    reached.add(name)
    assert not reached, f"{path.relative_to(SRC)} reaches into {sorted(reached)}"
