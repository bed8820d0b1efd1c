"""Optional packages stay optional: the PostgreSQL driver is imported only by the PostgreSQL
store, and only when a postgresql:// URL is opened; pydantic (a possible state type) and
cryptography (encryption at rest) are imported only inside the function that needs them. So
``import perdure`` needs only the base dependencies and stays lean."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import perdure

SRC = Path(perdure.__file__).parent


OPTIONAL = ("psycopg", "psycopg_pool", "pydantic", "cryptography", "pydantic_ai", "agents")

# The framework integrations are optional packages of their own (an extra each): a user imports
# one only with its framework installed, and both frameworks are built on pydantic.
FRAMEWORKS = (SRC / "pydantic_ai", SRC / "openai_agents")
# So is the HTTP server (extra ``server``, which includes pydantic): its request and response
# bodies are pydantic models, and nothing outside it imports it at module level.
SERVER = SRC / "server"


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """Every absolute import in the module at ``path``: the module it names, its line, and
    whether it runs when the module is imported (outside any function and not under
    ``if TYPE_CHECKING:``)."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, eager: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno, eager) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno, eager))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            eager = False
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, eager)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, eager)

    visit(ast.parse(path.read_text()), True)
    return found


def test_importing_perdure_and_its_cli_loads_no_optional_package() -> None:
    code = (
        "import sys, perdure, perdure.cli.main, perdure.store, perdure.testing;"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {OPTIONAL!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_only_the_postgres_store_modules_import_the_driver() -> None:
    for path in SRC.rglob("*.py"):
        for name, _line, _eager in _imports(path):
            if name.split(".")[0] in {"psycopg", "psycopg_pool"}:
                assert path.parent == SRC / "store" / "postgres", path


def test_pydantic_and_cryptography_are_imported_only_where_used() -> None:
    for path in SRC.rglob("*.py"):
        if path.parent in FRAMEWORKS:
            continue
        for name, line, eager in _imports(path):
            if path.parent == SERVER and name.split(".")[0] == "pydantic":
                continue
            if name.split(".")[0] in {"pydantic", "cryptography"}:
                assert not eager, f"import it inside the function that needs it: {path}:{line}"


def test_the_import_scanner_tells_eager_from_lazy_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import pydantic\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import cryptography\n"
        "def f():\n    from cryptography.x import y\n"
        "class C:\n    import psycopg\n"
    )
    assert _imports(module) == [
        ("pydantic", 1, True),
        ("typing", 2, True),
        ("cryptography", 4, False),
        ("cryptography.x", 6, False),
        ("psycopg", 8, True),
    ]


def test_passwords_never_reach_messages() -> None:
    from perdure.store.url import safe_url

    assert safe_url("postgresql://app:s3cret@db.internal:5433/runs") == (
        "postgresql://app:***@db.internal:5433/runs"
    )
    assert safe_url("sqlite:///.perdure/perdure.db") == "sqlite:///.perdure/perdure.db"
