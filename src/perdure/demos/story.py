"""What the demos' stories share: a fresh database, each command in a new process, and the
verdict that ends the story (exit code 1 when it went wrong)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click


def fresh_db(prefix: str) -> tuple[Path, str]:
    """A new temporary folder and the URL of an SQLite database in it (announced)."""
    import tempfile  # only the stories need it, not a resume on their database

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    db = f"sqlite:///{folder / 'demo.db'}"
    click.echo(f"Fresh database: {db}")
    return folder, db


def commands(db: str, *group: str) -> Callable[..., int]:
    """``step(title, *args)``: show and run ``perdure --db DB GROUP... ARGS...`` in a new
    process, and return its exit code."""

    def step(title: str, *args: str) -> int:
        click.secho(f"\n$ perdure {' '.join([*group, *args])}", bold=True)
        click.echo(f"# {title}")
        import subprocess  # only the stories need it

        cmd = [sys.executable, "-m", "perdure", "--db", db, *group, *args]
        code = subprocess.run(cmd, check=False).returncode
        click.echo(f"# exit code {code}")
        return code

    return step


def verdict(ok: bool, success: str, failure: str = "The demo did not go as expected.") -> None:
    """End a story: say how it went; exit with code 1 when it went wrong."""
    click.echo("\n" + (success if ok else failure))
    if not ok:
        sys.exit(1)
