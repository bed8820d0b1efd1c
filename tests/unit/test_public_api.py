"""Every name a step author uses is exported from ``perdure``, documented, and importable in a
bare install (no pydantic, cryptography or psycopg)."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import perdure

ROOT = Path(__file__).resolve().parents[2]

STEP_AUTHOR_NAMES = {
    "Runtime",
    "Workflow",
    "step",
    "goto",
    "done",
    "fail",
    "RetryPolicy",
    "Reconciled",
    "Budget",
    "Principal",
    "wait_for_approval",
    "wait_for_signal",
    "sleep",
    "sleep_until",
    "TransientError",
    "PermanentError",
    "UnknownOutcomeError",
    "EffectResult",
    "EffectRejectedError",
    "Context",
    "Message",
    "ToolCall",
    "Run",
    "RunStatus",
    "Durability",
    "Release",
    "PerdureError",
    "FakeClock",
    "Worker",
}

OPTIONAL = ("pydantic", "cryptography", "psycopg", "psycopg_pool")

BLOCKER = f"""
import sys
from importlib.abc import MetaPathFinder

class Blocked(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocked())
"""


def test_every_exported_name_resolves() -> None:
    assert len(perdure.__all__) == len(set(perdure.__all__)), "a name is listed twice"
    for name in perdure.__all__:
        assert getattr(perdure, name, None) is not None, name


def test_the_names_a_step_author_needs_are_exported() -> None:
    assert set(perdure.__all__) >= STEP_AUTHOR_NAMES, STEP_AUTHOR_NAMES - set(perdure.__all__)


def test_every_public_class_or_function_is_exported() -> None:
    for name in perdure.__all__:
        getattr(perdure, name)  # the names load on first use
    public = {
        name
        for name, value in vars(perdure).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__.startswith("perdure.")
    }
    assert public <= set(perdure.__all__), public - set(perdure.__all__)


def test_the_type_checking_imports_match_the_lazy_table() -> None:
    """What a type checker sees (the ``TYPE_CHECKING`` imports) is what ``__getattr__`` loads."""
    tree = ast.parse((ROOT / "src" / "perdure" / "__init__.py").read_text())
    guarded = next(
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    seen = {
        alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == perdure._MODULE_OF


def test_importing_the_package_loads_no_submodule() -> None:
    code = "import sys, perdure; print(sorted(m for m in sys.modules if m.startswith('perdure')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['perdure']"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        perdure.NoSuchThing  # noqa: B018
    assert "Runtime" in dir(perdure)


def test_the_module_docstring_names_every_export() -> None:
    doc = perdure.__doc__ or ""
    missing = [n for n in perdure.__all__ if not re.search(rf"`{re.escape(n)}`", doc)]
    assert not missing, f"add to the groups in perdure/__init__.py's docstring: {missing}"


def test_the_concepts_page_lists_every_export_at_a_glance() -> None:
    text = (ROOT / "docs" / "concepts.md").read_text()
    section = text.split("## API at a glance", 1)
    assert len(section) == 2, "docs/concepts.md has an 'API at a glance' section"
    body = section[1].split("\n## ", 1)[0]
    missing = [n for n in perdure.__all__ if not re.search(rf"`{re.escape(n)}\b", body)]
    assert not missing, f"add to 'API at a glance' in docs/concepts.md: {missing}"
    listed = set(re.findall(r"^- `(\w+)", body, re.M))
    assert listed <= set(perdure.__all__), f"not exported: {listed - set(perdure.__all__)}"


def test_a_bare_install_imports_every_public_name_and_the_cli() -> None:
    code = BLOCKER + textwrap.dedent(
        f"""
        from perdure import *
        import perdure, perdure.cli.main
        for name in perdure.__all__:
            assert globals()[name] is getattr(perdure, name), name
        policy = RetryPolicy(max_attempts=4, initial_delay=2, max_delay=30)
        assert policy.allows("rate_limited")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {OPTIONAL!r})
        print("loaded:", loaded)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "loaded: []"


def test_the_blocker_really_blocks() -> None:
    code = BLOCKER + "import pydantic"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode != 0
    assert "blocked" in out.stderr
