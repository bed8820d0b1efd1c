"""The contract of the ``archive`` wing (a run's rows out to the cold tier and back), reached as
``store.archive``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.history import (
    ArchivedRow,
)
from perdure.core.model import Run


class ArchiveStore(Protocol):
    """Every row a run owns, out (to archive it) and back in (to restore it)."""

    def export_run(self, tenant_id: str, run_id: str) -> list[ArchivedRow]:
        """Every row of the run: the run first, then its steps, state, history, events,
        effects, approvals, signals, savepoints, lineage, artifact references and its own
        messages, each table in its order. Read-only;
        :class:`~perdure.core.errors.RunNotFoundError` for an unknown run."""
        ...

    def import_run(self, tenant_id: str, rows: Sequence[ArchivedRow], now: datetime) -> Run:
        """Write an exported run back, in one transaction, and append a ``restored`` event.
        Generated ids (event sequence numbers, message positions in the thread) are new; the
        order is kept. Refused (:class:`~perdure.core.errors.InvalidInputError`, nothing
        written) when the run exists or a row belongs to another run or tenant."""
        ...
