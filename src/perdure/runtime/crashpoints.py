"""Named crash points for crash tests: ``PERDURE_CRASH_AT=<point>[:<name>]``.

When the variable names a point the process reaches, it prints ``CRASH <point>`` to stderr and
leaves with ``os._exit(75)``: no cleanup, no final commit, exactly like a killed process.
``<name>`` narrows the point to one step (or effect) name. Unset, a crash point costs one
comparison.

Points: ``before_commit`` and ``after_commit`` around every step-boundary commit (named by the
step); ``before_intent``, ``after_intent``, ``after_call`` and ``after_outcome`` around every
effect (named by the effect), ``after_upload`` once an artifact's bytes are uploaded, before
the step's boundary records it (named by the step); ``group_begin`` and ``group_durable`` before
a group commit of two or more runs is written and after it is durable, before any of its runs
hears so (named by the group's number in the process: ``group_durable:3`` is the third group).
``before_compact`` and ``after_compact`` around the commit of a boundary that compacts a field
log (writes it whole because its tails reached their thresholds; named by the field), after
``before_commit`` and ``after_commit`` of that boundary.

An effect's name repeats across steps (every step's first model call is ``model.1``), so an
effect point may name one occurrence: ``<effect>@<step>`` is the effect of that step only, and
``<effect>@<step>#<seq>`` the one of the run's ``<seq>``-th step (numbered from 1, as
``perdure history`` numbers them), for a step that runs more than once. ``after_call:model.1``
still means every effect so named.

``PERDURE_PAUSE_AT=<point>[:<name>]`` names one of the same points at which the process, the
first time it gets there, stops itself with ``SIGSTOP`` instead: every thread of it is frozen
(its heartbeat too), as a paused VM or a stop-the-world pause would freeze it, until the test
sends ``SIGCONT``.

Fault points, for the fault drills (``perdure drills``): ``PERDURE_FAULT_AT=<fault>:<name>``
injects one fault, once per process: ``timeout:<step>`` makes the step's call raise
``TimeoutError`` (a model call that timed out) before the step's code runs, and
``timeout:<effect>@<step>[#<seq>]`` makes that effect's call raise ``TimeoutError`` before
anything is sent (the provider never took it); ``unknown:<effect>`` (or
``unknown:<effect>@<step>[#<seq>]``) treats the effect's answer as an unknown outcome after
``execute`` returned (the provider acted, the reply was lost); ``hold:<step>`` waits, before the
step's code runs, until the file named by ``PERDURE_FAULT_GATE`` can be locked shared (the drill
holds it exclusively). When a fault fires, the file named by ``PERDURE_FAULT_MARK`` (if set) is
created first, so the drill knows.
"""

from __future__ import annotations

import os
import sys

EXIT_CODE = 75

_spec = os.environ.get("PERDURE_CRASH_AT") or None
_point, _, _name = (_spec or "").partition(":")
_pause = os.environ.get("PERDURE_PAUSE_AT") or None


EFFECT_POINTS = ("before_intent", "after_intent", "after_call", "after_outcome")
"""Crash points around every effect (named by the effect)."""
COMMIT_POINTS = ("before_commit", "after_commit")
"""Crash points around every step-boundary commit (named by the step)."""
COMPACT_POINTS = ("before_compact", "after_compact")
"""Crash points around the commit of a boundary that compacts a field log (named by the field)."""


def arm(spec: str | None) -> None:
    """Select a crash point from code (as ``PERDURE_CRASH_AT`` does); None disarms."""
    global _spec, _point, _name  # noqa: PLW0603 (one process-wide setting, like the variable)
    _spec = spec or None
    _point, _, _name = (spec or "").partition(":")


def effect_target(name: str, step: str, seq: int | None = None) -> str:
    """How a crash or fault point names effect ``name`` of ``step`` (of the run's ``seq``-th
    step when given): ``name@step`` or ``name@step#seq``."""
    return f"{name}@{step}" if seq is None else f"{name}@{step}#{seq}"


def selects(wanted: str, name: str | None, step: str | None = None, seq: int | None = None) -> bool:
    """True if the name part of a point (``wanted``; empty: any) selects ``name``, reached in
    ``step`` (the run's ``seq``-th step) when the point is an effect's. A qualified ``wanted``
    (``name@step[#seq]``) selects only effects."""
    if not wanted:
        return True
    base, at, where = wanted.partition("@")
    if base != name:
        return False
    if not at:
        return True
    if step is None:
        return False
    want_step, hash_, want_seq = where.partition("#")
    return want_step == step and (not hash_ or want_seq == str(seq))


_fault_kind, _, _fault_name = (os.environ.get("PERDURE_FAULT_AT") or "").partition(":")
_fault_fired = False


def fault(
    kind: str,
    name: str,
    step: str | None = None,
    seq: int | None = None,
    *,
    qualified: bool = False,
) -> bool:
    """True (once per process) if ``PERDURE_FAULT_AT`` selects this fault for ``name`` (an
    effect of ``step``, the run's ``seq``-th step; ``qualified``: only when the variable names
    the step too); a ``hold`` fault has waited at its gate when this returns."""
    global _fault_fired  # noqa: PLW0603 (one process-wide setting, like the variable)
    if _fault_fired or kind != _fault_kind or not selects(_fault_name, name, step, seq):
        return False
    if qualified and "@" not in _fault_name:
        return False
    _fault_fired = True
    mark = os.environ.get("PERDURE_FAULT_MARK")
    if mark:
        open(mark, "w").close()
    if kind == "hold":
        import fcntl

        with open(os.environ["PERDURE_FAULT_GATE"], "a") as gate:
            fcntl.flock(gate, fcntl.LOCK_SH)
    return True


def crashpoint(
    point: str, name: str | None = None, step: str | None = None, seq: int | None = None
) -> None:
    """Exit the process at once if ``PERDURE_CRASH_AT`` selects this point (and name; for an
    effect's point, ``step`` and ``seq`` say which step occurrence it belongs to)."""
    if _pause is not None:
        _paused(point, name, step, seq)
    if _spec is None or point != _point or not selects(_name, name, step, seq):
        return
    sys.stdout.flush()
    sys.stderr.write(f"CRASH {point}{':' + name if name else ''}\n")
    sys.stderr.flush()
    os._exit(EXIT_CODE)


def _paused(point: str, name: str | None, step: str | None, seq: int | None) -> None:
    """Stop this process (``SIGSTOP``, once) if ``PERDURE_PAUSE_AT`` selects this point."""
    global _pause  # noqa: PLW0603 (one process-wide setting, like the variable)
    wanted, _, wanted_name = (_pause or "").partition(":")
    if point != wanted or not selects(wanted_name, name, step, seq):
        return
    _pause = None
    import signal
    import threading

    sys.stdout.flush()
    sys.stderr.write(f"PAUSE {point}{':' + name if name else ''}\n")
    sys.stderr.flush()
    # sent to this thread, not to the process: a process-wide signal may be taken by another
    # thread while this one runs on past the point before the whole process stops
    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
