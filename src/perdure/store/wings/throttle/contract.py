"""The contract of the ``throttle`` wing (failed credential checks), reached as
``store.throttle``.

The rules of :mod:`perdure.store.base` (tenant scoping does not apply: a subject is a client
address or a key id, seen before any tenant is known; "now" as a parameter, one transaction
per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.throttle import FailedChecks, ThrottlePolicy


class ThrottleStore(Protocol):
    """Failed checks per subject, counted once for every process on the database."""

    def failed(
        self, subjects: Sequence[str], now: datetime, policy: ThrottlePolicy
    ) -> list[FailedChecks]:
        """Count one failed check of each of ``subjects`` at ``now`` under ``policy``, in one
        transaction (two processes counting the same subject at once both count), and return
        each subject's record after it. Records forgotten by ``policy`` at ``now`` are
        deleted in the same transaction, so the table stays as small as the recent failures."""
        ...

    def checks(self, subjects: Sequence[str]) -> list[FailedChecks]:
        """The records of those of ``subjects`` that have any (forgotten or not)."""
        ...
