"""Which attempt a step is on, counted across failures and crashes.

A step runs again after a failure its retry policy retries (a ``retry_scheduled`` event) and
after a crash: a worker that takes the run over from one that still held its lease (a
``claimed`` event naming a ``previous_owner``) runs the step in progress again. Both are
attempts of that step. The run's stored counts say which attempt the step in progress is on
(:attr:`perdure.core.model.Run.attempt`); this module reads the attempt each committed step
committed on back from the run's events, for ``perdure history`` and the dashboard.

A takeover between two steps (the crash came after a boundary, before the next step began)
counts for the step that came next, which is the one the new worker runs: the events cannot
tell the two cases apart, and neither can the store's count.
"""

from __future__ import annotations

from collections.abc import Iterable

from perdure.core.model import Event
from perdure.core.records import EventType


def is_takeover(event: Event) -> bool:
    """Whether ``event`` is a claim that took the run from a worker still holding its lease."""
    return (
        event.type is EventType.CLAIMED
        and isinstance(event.data, dict)
        and event.data.get("previous_owner") is not None
    )


def committed_attempts(events: Iterable[Event]) -> dict[int, int]:
    """The attempt each committed step (by its number) committed on: 1, plus the failed
    attempts and the takeovers since the boundary before it. ``events`` are the run's events,
    oldest first; a step whose boundary is not among them is missing from the answer."""
    found: dict[int, int] = {}
    extra = 0
    for e in sorted(events, key=lambda e: e.seq):
        if e.type is EventType.RETRY_SCHEDULED or is_takeover(e):
            extra += 1
        elif e.type is EventType.STEP_COMPLETED and isinstance(e.data, dict):
            seq = e.data.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                found[seq] = 1 + extra
                extra = 0
    return found
