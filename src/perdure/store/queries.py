"""Named SQL queries, loaded from ``<dialect>/sql/queries.sql``.

The file is a sequence of blocks, each introduced by a ``-- name: NAME`` line. Queries use named
parameters. SQL is never assembled from strings at run time.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def sql_text(dialect: str, filename: str) -> str:
    """The text of a file shipped in ``perdure/store/<dialect>/sql/``."""
    return resources.files("perdure.store").joinpath(dialect, "sql", filename).read_text("utf-8")


@cache
def queries(dialect: str) -> dict[str, str]:
    """Every named query of a dialect, by name. Duplicate names are a packaging bug."""
    text = sql_text(dialect, "queries.sql")
    parts = _HEADER.split(text)
    found: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise RuntimeError(f"query {name!r} is defined twice in {dialect}/queries.sql")
        found[name] = body.strip()
    return found
