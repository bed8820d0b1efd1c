"""Failed credential checks: :class:`ThrottleWing`, the ``throttle`` wing of the store;
contracts in :class:`~perdure.store.wings.throttle.contract.ThrottleStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from perdure.core.errors import StoreError
from perdure.core.throttle import FailedChecks, ThrottlePolicy
from perdure.store.engine.base import EngineBase
from perdure.store.rows import Row, When


def _checks(row: Row, when: When) -> FailedChecks:
    until = when(row["until"])
    if until is None:
        raise StoreError(f"failed checks of {row['subject']!r} have no time")
    return FailedChecks(row["subject"], int(row["failures"]), until)


class ThrottleWing(EngineBase):
    """Failed credential checks per subject: the ``throttle`` wing."""

    def failed(
        self, subjects: Sequence[str], now: datetime, policy: ThrottlePolicy
    ) -> list[FailedChecks]:
        """See :meth:`ThrottleStore.failed`."""
        stamp = self.driver.stamp(now)
        out = []
        with self.driver.write() as tx:
            forgotten = self.driver.stamp(now - timedelta(seconds=policy.forget))
            tx.run("forget_failed_checks", {"before": forgotten})
            for subject in sorted(set(subjects)):  # one order: two writers never deadlock
                tx.run("open_failed_checks", {"subject": subject, "now": stamp})
                row = tx.one("lock_failed_checks", {"subject": subject})
                found = (
                    None if row is None or row["failures"] == 0 else _checks(row, self.driver.when)
                )
                after = policy.failed(subject, found, now)
                tx.run(
                    "set_failed_checks",
                    {
                        "subject": subject,
                        "failures": after.failures,
                        "until": self.driver.stamp(after.until),
                    },
                )
                out.append(after)
        return out

    def checks(self, subjects: Sequence[str]) -> list[FailedChecks]:
        """See :meth:`ThrottleStore.checks`."""
        found = []
        with self.driver.read() as tx:
            for subject in sorted(set(subjects)):
                row = tx.one("lock_failed_checks_read", {"subject": subject})
                if row is not None and row["failures"] > 0:
                    found.append(_checks(row, self.driver.when))
        return found
