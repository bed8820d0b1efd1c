"""The PostgreSQL driver is optional: only the PostgreSQL store imports it, and only when a
postgresql:// URL is opened, so ``import perdure`` stays lean."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import perdure

SRC = Path(perdure.__file__).parent


def test_importing_perdure_and_its_cli_loads_no_postgres_driver() -> None:
    code = (
        "import sys, perdure, perdure.cli.main, perdure.store, perdure.testing;"
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_only_the_postgres_store_modules_import_the_driver() -> None:
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in {"psycopg", "psycopg_pool"} for n in names):
                assert path.parent == SRC / "store" / "postgres", path


def test_passwords_never_reach_messages() -> None:
    from perdure.store.url import safe_url

    assert safe_url("postgresql://app:s3cret@db.internal:5433/runs") == (
        "postgresql://app:***@db.internal:5433/runs"
    )
    assert safe_url("sqlite:///.perdure/perdure.db") == "sqlite:///.perdure/perdure.db"
