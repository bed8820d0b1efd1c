"""Shared pieces of the command line: global settings, app loading, one-line errors."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import click
import orjson

from perdure.core.errors import (
    ConfigError,
    InvalidInputError,
    PerdureError,
    StoreUnavailableError,
)
from perdure.core.model import Run, RunStatus
from perdure.core.workflow import Workflow
from perdure.runtime.runtime import Runtime
from perdure.store import migrate as migrations
from perdure.store.url import existing, safe_url

EXIT_ERROR = 1

EXTRAS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "langgraph": "langgraph",
    "langchain_core": "langgraph",
    "boto3": "s3",
    "botocore": "s3",
    "pydantic": "pydantic",
    "cryptography": "crypto",
    "starlette": "server",
    "uvicorn": "server",
    "jinja2": "server",
    "prometheus_client": "server",
    "pydantic_ai": "pydantic-ai",
    "agents": "openai-agents",
    "mcp": "mcp",
}
"""Optional packages by import name, and the extra of perdure that installs each."""


class Settings:
    """Global options shared by every command."""

    def __init__(self, db: str, tenant: str) -> None:
        self.db = db
        self.tenant = tenant

    def runtime(
        self, app: str | None = None, *, with_workflows: bool = False, create: bool = False
    ) -> Runtime:
        """Open the runtime on ``--db``, loading the workflows of ``app`` when given. Only with
        ``create`` (``start``) is a missing schema created or an older one upgraded; otherwise
        the database must hold perdure's schema (see :meth:`reader`)."""
        workflows = load_app(app) if (app or with_workflows) else []
        if create:
            return Runtime(self.db, workflows=workflows)
        return self.existing(workflows)

    def reader(self) -> Runtime:
        """Open the runtime on ``--db`` for a command that only reads: a SQLite path with no
        database, or a database without perdure's schema, is an error (``store_unavailable``),
        never a new empty database or schema (only ``perdure migrate`` and the commands that
        start work create it)."""
        return self.existing([])

    def existing(self, workflows: list[Workflow[Any]]) -> Runtime:
        """The runtime on ``--db`` without migrating: refused in one line when the database or
        its schema is missing, or the schema is older than this release's (a read never
        upgrades it either: only ``perdure migrate`` and the commands that start work do)."""
        rt = Runtime(existing(self.db), workflows=workflows, migrate=False)
        version = rt.store.schema_version()
        latest = migrations.discover("sqlite")[-1].version  # both dialects number them alike
        if version < latest:
            rt.close()
            found = (
                "has no perdure schema"
                if version == 0
                else f"holds perdure's schema {version}, older than this release's {latest}"
            )
            raise StoreUnavailableError(
                f"the database {safe_url(self.db)} {found}",
                fix="create or upgrade it with `perdure migrate` (check --db or PERDURE_DB)",
            )
        return rt


def load_app(app: str | None) -> list[Workflow[Any]]:
    """Import ``app`` (a module path) and return the workflows it defines at top level."""
    app = app or os.environ.get("PERDURE_APP")
    if not app:
        raise ConfigError(
            "no workflows are loaded", fix="pass --app MODULE or set PERDURE_APP=MODULE"
        )
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(app)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in EXTRAS and top != app.split(".")[0]:
            raise ConfigError(
                f"app module {app!r} needs {exc.name}, which is not installed",
                fix=f"pip install 'perdure[{EXTRAS[top]}]'",
            ) from exc
        raise ConfigError(
            f"cannot import app module {app!r}: {exc}",
            fix="give an importable module path (run from its project folder or install it)",
        ) from exc
    except ImportError as exc:
        raise ConfigError(
            f"cannot import app module {app!r}: {exc}",
            fix="give an importable module path (run from its project folder or install it)",
        ) from exc
    except PerdureError:  # a workflow declaration refused: its own line says what to fix
        raise
    except Exception as exc:  # the user's module failed while loading: say so in one line
        raise ConfigError(
            f"app module {app!r} raised {type(exc).__name__} while loading: {exc}",
            fix=f"run `python -c 'import {app}'` to see the traceback, and fix the module",
        ) from exc
    found = [v for v in vars(module).values() if isinstance(v, Workflow)]
    if not found:
        raise ConfigError(
            f"module {app!r} defines no Workflow at top level",
            fix="declare workflows as module-level Workflow(...) objects",
        )
    return found


def parse_json(text: str | None, what: str) -> Any:
    """Parse a JSON option, or raise a clear error naming the option."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{what} is not valid JSON ({exc})", fix=f"""quote it, e.g. {what} '{{"key": 1}}'"""
        ) from None


RUN_EXIT_CODES = {
    RunStatus.FAILED: 1,
    RunStatus.NEEDS_ATTENTION: 3,
    RunStatus.QUARANTINED: 4,
}
"""How ``resume`` and ``start --wait`` exit when the run stopped short (0 otherwise)."""


def exit_for(run: Run) -> None:
    """Exit with the run's code from :data:`RUN_EXIT_CODES` when it has one."""
    code = RUN_EXIT_CODES.get(run.status)
    if code is not None:
        sys.exit(code)


def run_command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn any :class:`PerdureError` into one line on stderr and exit code 1."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PerdureError as exc:
            click.echo(exc.one_line(), err=True)
            sys.exit(EXIT_ERROR)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


pass_settings = click.make_pass_decorator(Settings)
app_option = click.option(
    "--app", envvar="PERDURE_APP", help="Module that defines the workflows (env PERDURE_APP)."
)
