"""What a step hands to an effect: the calls that make it, check it and undo it.

Each may be a plain function or ``async def``; the runtime awaits an async one on its event
loop. ``request`` is the effect's JSON request as recorded, ``key`` its idempotency key (stable
across retries, crashes and re-executions of the step: pass it to the provider).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from perdure.core.effects import Reconciled

Execute = Callable[..., Any]
"""``execute(request, key)``: makes the call; sync, or ``async def``. An effect with a
``deadline`` calls ``execute(request, key, timeout=seconds)``: the call must give up by then."""
Reconcile = Callable[[Any, str], "Reconciled | Awaitable[Reconciled]"]
"""``reconcile(request, key)``: asks the provider what happened; sync, or ``async def``."""
Compensate = Callable[[Any, str, Any], Any]
"""``compensate(request, key, result)``: undoes a confirmed effect; sync, or ``async def``."""


@dataclass(frozen=True, slots=True)
class Offloaded:
    """Yielded while an effect's call runs elsewhere (a parallel branch's call, in a thread or
    on the event loop): the effect's ``key`` and the ``future`` of its call."""

    key: str
    future: Future[Any]
