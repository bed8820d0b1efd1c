"""The run state machine: the one table of allowed status changes.

Every status change anywhere in perdure goes through :func:`check`. The store then makes the change
with a conditional update, so a change decided against a stale read is refused by the database.

Staying in RUNNING across a step boundary is not a status change and is not in the table.
"""

from __future__ import annotations

from perdure.core.errors import IllegalTransitionError, RunClosedError
from perdure.core.model import TERMINAL, RunStatus

S = RunStatus

ALLOWED: dict[RunStatus, frozenset[RunStatus]] = {
    S.PENDING: frozenset({S.RUNNING, S.CANCEL_REQUESTED}),
    S.RUNNING: frozenset(
        {
            S.SUCCEEDED,
            S.FAILED,
            S.WAITING_APPROVAL,
            S.WAITING_EXTERNAL,
            S.NEEDS_ATTENTION,
            S.QUARANTINED,
            S.CANCEL_REQUESTED,
        }
    ),
    S.WAITING_APPROVAL: frozenset({S.RUNNING, S.CANCEL_REQUESTED}),
    S.WAITING_EXTERNAL: frozenset({S.RUNNING, S.CANCEL_REQUESTED}),
    S.NEEDS_ATTENTION: frozenset({S.RUNNING, S.FAILED, S.CANCELLED, S.CANCEL_REQUESTED}),
    S.QUARANTINED: frozenset({S.RUNNING, S.FAILED, S.CANCEL_REQUESTED}),
    # a cancel that meets an effect whose outcome nobody can tell goes to a person
    S.CANCEL_REQUESTED: frozenset({S.CANCELLED, S.NEEDS_ATTENTION}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.CANCELLED: frozenset(),
}
"""``ALLOWED[a]`` is the set of statuses a run in status ``a`` may move to."""


def allowed(current: RunStatus, target: RunStatus) -> bool:
    """True when the table allows ``current -> target``."""
    return target in ALLOWED[current]


def check(current: RunStatus, target: RunStatus) -> None:
    """Raise unless ``current -> target`` is in the table.

    A terminal ``current`` raises :class:`RunClosedError` (the caller met a finished run); any
    other disallowed change raises :class:`IllegalTransitionError`.
    """
    if current in TERMINAL:
        raise RunClosedError(f"run is {current} and cannot move to {target}")
    if target not in ALLOWED[current]:
        raise IllegalTransitionError(f"a run cannot move from {current} to {target}")
