"""Schema migrations: numbered, checksummed, up-only SQL files per dialect.

Files live in ``perdure/store/<dialect>/sql/NNNN_verb_object.sql``; both dialects ship the same
numbers and names. The store applies the pending ones in order inside its own lock and records
``(version, name, checksum)`` in ``perdure_migrations``. This module is pure: it discovers the
files and decides what to apply; the store does the I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from perdure.core.errors import MigrationChecksumError, SchemaTooNewError
from perdure.store.queries import SHIPPED

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One migration file: its version number, name, SQL text and SHA-256 checksum."""

    version: int
    name: str
    sql: str
    checksum: str


def discover(dialect: str) -> list[Migration]:
    """The dialect's migrations, ordered by version."""
    folder = SHIPPED / dialect / "sql"
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            text = entry.read_text("utf-8")
            digest = hashlib.sha256(text.encode()).hexdigest()
            found.append(Migration(int(match.group(1)), match.group(2), text, digest))
    found.sort(key=lambda m: m.version)
    return found


def pending(known: list[Migration], applied: Iterable[tuple[int, str, str]]) -> list[Migration]:
    """The migrations still to apply, given ``(version, name, checksum)`` rows already applied.

    Raises :class:`SchemaTooNewError` if the database has a version this code does not know and
    :class:`MigrationChecksumError` if an applied file was edited since it was applied.
    """
    by_version = {m.version: m for m in known}
    done: set[int] = set()
    for version, name, checksum in applied:
        mine = by_version.get(version)
        if mine is None:
            newest = known[-1].version if known else 0
            raise SchemaTooNewError(
                f"the database has schema version {version} ({name}); "
                f"this perdure knows up to {newest}"
            )
        if mine.checksum != checksum:
            raise MigrationChecksumError(
                f"migration {version:04d}_{name} was changed after it was applied"
            )
        done.add(version)
    return [m for m in known if m.version not in done]
