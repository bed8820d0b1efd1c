"""Parking a process inside an open transaction, for freeze tests: ``PERDURE_PARK_IN_TX``.

``PERDURE_PARK_IN_TX=<query>`` names a query of ``queries.sql``: the first time this process has
run it inside an open write transaction (its rows read back, the transaction's locks held), the
process stops itself with ``SIGSTOP`` — a worker frozen at that point (a paused VM, a
stop-the-world pause) until something sends ``SIGCONT``. Before it stops, it writes a line to the
file (or the test's named pipe) that ``PERDURE_PARK_MARK`` names, if set, so the test knows. The
point fires once per process, so the continued process goes on. Unset, it costs one comparison.
"""

from __future__ import annotations

import os
import signal

_query = os.environ.get("PERDURE_PARK_IN_TX") or None
_fired = False

ARMED = _query is not None
"""Whether this process may park: callers skip :func:`park_after` (and what it needs) when not."""


def park_after(query: str, in_transaction: bool) -> None:
    """Stop this process (once) if ``PERDURE_PARK_IN_TX`` names ``query`` and it ran inside an
    open transaction."""
    global _fired  # noqa: PLW0603 (one process-wide setting, like the variable)
    if _query is None or query != _query or not in_transaction or _fired:
        return
    _fired = True
    mark = os.environ.get("PERDURE_PARK_MARK")
    if mark:
        with open(mark, "w") as out:
            out.write(f"parked {query}\n")
    os.kill(os.getpid(), signal.SIGSTOP)
