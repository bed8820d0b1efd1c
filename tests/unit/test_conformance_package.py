"""The shipped conformance suite: every module is run on this project's backends, and each
wing's module skips itself on a store without that wing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from perdure.testing import conformance
from perdure.testing.conformance.support import needs

PACKAGE = Path(conformance.__file__).parent
TESTS = Path(__file__).resolve().parents[1] / "conformance"
WINGED = {
    "access": {"access"},
    "sessions": {"access"},
    "checkpoints": {"graphs"},
    "memory": {"memory"},
    "memory_vectors": {"memory"},
    "history": {"history"},
    "lifecycle": {"history", "artifacts", "retention"},
}


def _modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in {"__init__", "support"})


def test_every_module_is_run_here() -> None:
    brought = {
        n.module.rsplit(".", 1)[1]
        for p in TESTS.glob("test_*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.ImportFrom)
        and (n.module or "").startswith("perdure.testing.conformance.")
        and any(a.name == "*" for a in n.names)
    }
    assert brought == set(_modules())


@pytest.mark.parametrize("module", _modules())
def test_a_wing_module_asks_for_its_wing_and_a_kernel_module_for_none(module: str) -> None:
    asked: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "needs":
            asked |= {a.value for a in node.args[1:] if isinstance(a, ast.Constant)}
    assert asked == WINGED.get(module, set())


def test_a_store_without_a_wing_skips() -> None:
    class KernelOnly:
        memory = None

    with pytest.raises(pytest.skip.Exception, match="no memory wing"):
        needs(KernelOnly(), "memory")  # type: ignore[arg-type]
