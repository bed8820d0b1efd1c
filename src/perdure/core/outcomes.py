"""Step outcomes: what a step hands back to say what comes next. :func:`goto` another step,
:func:`done` with a result, :func:`fail` with a typed reason, or a wait that holds no process:
:func:`wait_for_approval`, :func:`wait_for_signal`, :func:`sleep` / :func:`sleep_until`,
:func:`wait_for_children`. Re-exported by :mod:`perdure.core.workflow`, which checks each
outcome's continuations against the step's declared ``next``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from perdure.core.errors import DefinitionError
from perdure.core.model import JSON

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,99}$")
"""What a workflow name, a step name and a failure reason may look like."""


@dataclass(frozen=True, slots=True)
class Next:
    """Outcome: continue with ``step``. ``state``, when given, replaces the run's state."""

    step: str
    state: Any = None


@dataclass(frozen=True, slots=True)
class Done:
    """Outcome: the run succeeded with ``result`` (any JSON value)."""

    result: JSON = None
    state: Any = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Outcome: the run failed for a typed ``reason`` (a stable snake_case code)."""

    reason: str
    message: str = ""
    details: dict[str, JSON] = field(default_factory=dict)
    state: Any = None


@dataclass(frozen=True, slots=True)
class WaitApproval:
    """Outcome: wait (holding nothing) until a person with ``role`` approves or rejects
    ``request``; then continue with ``on_approve`` or ``on_reject``."""

    role: str
    request: JSON
    on_approve: str
    on_reject: str
    state: Any = None


@dataclass(frozen=True, slots=True)
class WaitSignal:
    """Outcome: wait for a signal called ``name`` (one already in the run's inbox counts), then
    continue with ``next``; after ``timeout`` seconds continue with ``on_timeout`` instead (or
    fail with ``signal_timeout`` when it is None)."""

    name: str
    next: str
    timeout: float | None = None
    on_timeout: str | None = None
    state: Any = None


@dataclass(frozen=True, slots=True)
class Sleep:
    """Outcome: wait until ``until`` (a timezone-aware time), then continue with ``next``."""

    until: datetime
    next: str
    state: Any = None


@dataclass(frozen=True, slots=True)
class WaitChildren:
    """Outcome: wait (holding nothing) until the child runs named in ``keys`` (None: all the
    run started) are settled, then continue with ``next``; it reads them as ``ctx.children``."""

    next: str
    keys: tuple[str, ...] | None = None
    state: Any = None


Outcome = Next | Done | Fail | WaitApproval | WaitSignal | Sleep | WaitChildren


def goto(step: str, state: Any = None) -> Next:
    """Continue the run with ``step`` (which the current step must list in ``next``)."""
    return Next(step, state)


def done(result: JSON = None, state: Any = None) -> Done:
    """End the run as SUCCEEDED with ``result``."""
    return Done(result, state)


def fail(reason: str, message: str = "", state: Any = None, **details: JSON) -> Fail:
    """End the run as FAILED with a typed ``reason`` code, a message and JSON details."""
    if not NAME.match(reason):
        raise DefinitionError(f"failure reason {reason!r} must be a snake_case code")
    return Fail(reason, message, details, state)


def wait_for_approval(
    role: str, request: JSON, *, on_approve: str, on_reject: str, state: Any = None
) -> WaitApproval:
    """Pause the run until a person holding ``role`` decides on ``request`` (shown to them).

    Both continuation steps must be listed in the step's ``next``. The next step sees the
    decision as ``ctx.approval``.
    """
    return WaitApproval(role, request, on_approve, on_reject, state)


def wait_for_signal(
    name: str,
    *,
    next: str,
    timeout: float | None = None,
    on_timeout: str | None = None,
    state: Any = None,
) -> WaitSignal:
    """Pause the run until signal ``name`` arrives (``perdure signal RUN NAME``), then go to
    ``next``; the step after reads it with ``ctx.signal(name)``."""
    return WaitSignal(name, next, timeout, on_timeout, state)


def sleep(seconds: float, *, next: str, now: datetime, state: Any = None) -> Sleep:
    """Pause the run for ``seconds`` from ``now`` (pass ``ctx.now()``), then go to ``next``."""
    return Sleep(now + timedelta(seconds=seconds), next, state)


def sleep_until(until: datetime, *, next: str, state: Any = None) -> Sleep:
    """Pause the run until ``until`` (timezone-aware), then go to ``next``."""
    if until.tzinfo is None:
        raise DefinitionError("sleep_until needs a timezone-aware time", fix="use ctx.now() + ...")
    return Sleep(until, next, state)


def wait_for_children(
    keys: Iterable[str] | None = None, *, on_done: str, state: Any = None
) -> WaitChildren:
    """Pause the run until its child runs (``ctx.spawn``) named in ``keys`` — all of them when
    None — have ended (SUCCEEDED, FAILED, CANCELLED) or need a person (NEEDS_ATTENTION,
    QUARANTINED); then go to ``on_done``, which reads each child with ``ctx.children``. No
    process is held meanwhile: the last child's own final commit wakes the parent."""
    chosen = None if keys is None else tuple(sorted(set([keys] if isinstance(keys, str) else keys)))
    return WaitChildren(on_done, chosen, state)


def continuations(outcome: Outcome) -> list[str]:
    """The steps an outcome may continue with (each must be declared in the step's ``next``)."""
    if isinstance(outcome, Next):
        return [outcome.step]
    if isinstance(outcome, WaitApproval):
        return [outcome.on_approve, outcome.on_reject]
    if isinstance(outcome, WaitSignal):
        return [outcome.next, *([outcome.on_timeout] if outcome.on_timeout else [])]
    if isinstance(outcome, Sleep | WaitChildren):
        return [outcome.next]
    return []
