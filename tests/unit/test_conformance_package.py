"""The shipped conformance suite: every module is run on this project's backends, and each
wing's module skips itself on a store without that wing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from perdure.testing import conformance
from perdure.testing.conformance.support import needs
from tests.unit.test_wings import WINGS

PACKAGE = Path(conformance.__file__).parent
TESTS = Path(__file__).resolve().parents[1] / "conformance"
WING = re.compile(r"store\.(" + "|".join(WINGS) + r")\.")


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


def _asked(node: ast.AST) -> set[str]:
    return {
        a.value
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "needs"
        for a in n.args[1:]
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    }


@pytest.mark.parametrize("module", _modules())
def test_a_test_that_uses_a_wing_asks_for_it(module: str) -> None:
    """Through the module's autouse fixture or a ``needs`` call of its own, so a backend
    without that wing skips the test instead of failing it."""
    source = (PACKAGE / f"{module}.py").read_text()
    tree = ast.parse(source)
    for_all = set().union(
        *(
            _asked(f)
            for f in tree.body
            if isinstance(f, ast.FunctionDef) and not f.name.startswith("test_")
        )
    )
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
            used = set(WING.findall(ast.get_source_segment(source, fn) or ""))
            assert used <= for_all | _asked(fn), f"{module}.{fn.name} uses {sorted(used)}"


def test_a_store_without_a_wing_skips() -> None:
    class KernelOnly:
        memory = None

    with pytest.raises(pytest.skip.Exception, match="no memory wing"):
        needs(KernelOnly(), "memory")  # type: ignore[arg-type]
