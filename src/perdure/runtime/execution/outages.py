"""Riding out a database outage: a write whose database cannot be reached is tried again, the
same write under the same fence, with backoff, for a bounded time; before each new try, a read
tells whether the lost attempt landed after all, so nothing is written twice. Boundaries
(:mod:`~perdure.runtime.execution.committer`) and effect writes
(:mod:`~perdure.runtime.execution.effect_outcomes`) both go through here.

The backoff is real time (it waits for a real server), not the runtime's clock."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from perdure.core.errors import StoreUnavailableError

T = TypeVar("T")

log = logging.getLogger("perdure")

FIRST_DELAY = 0.05
"""Seconds before the first new try."""

RETRY_FOR = 60.0
"""How long a write keeps trying while the database cannot be reached (seconds)."""


def ride_out(
    what: Callable[[], str],
    write: Callable[[], T],
    landed: Callable[[], T | None],
    retry_for: float = RETRY_FOR,
    failed: StoreUnavailableError | None = None,
) -> T:
    """``write()``'s answer. While it raises :class:`StoreUnavailableError`, wait (50 ms,
    doubling up to 2 s) and try again for up to ``retry_for`` seconds, then raise it. Before
    each new try, ``landed()`` returns the answer of a lost attempt that did land, or None.
    The first failure is logged as a warning naming what is being written (``what()``: made
    only then, not on every write). ``failed``: the caller's own first try already failed
    so (it wrote directly, to make nothing for a write that lands at once); the next step is
    the wait."""
    deadline = time.monotonic() + retry_for
    delay = FIRST_DELAY
    while True:
        exc, failed = failed, None
        if exc is None:
            try:
                return write()
            except StoreUnavailableError as caught:
                exc = caught
        if time.monotonic() + delay > deadline:
            raise exc
        if delay == FIRST_DELAY:
            log.warning(
                "%s could not reach the database (%s); trying again for up to %.0f s",
                what(),
                exc.message,
                retry_for,
            )
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
        try:
            found = landed()
        except StoreUnavailableError:
            continue
        if found is not None:
            return found
