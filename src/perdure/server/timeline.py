"""The run page's step timeline, drawn to scale like a trace view: one lane per committed step
(and one for the step in progress), a bar from the step's start to its committed boundary,
the failed attempts before it (a mark where each failed, a hatched bar for the wait until the
retry), takeovers after a crash, and the run's waits (for an approval, a signal, a timer or its
children) as lanes of their own. Geometry only (pixels from times); the template draws it as
SVG, so the page needs no script to show it.

Each lane also carries what the step spent: tokens and cost of its model calls, from their
recorded replies, and the attempt that committed (1 + the retries and takeovers it took)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from perdure.core.attempts import committed_attempts, is_takeover
from perdure.core.chat import MODEL_TARGET
from perdure.core.effects import EffectRecord
from perdure.core.model import JSON, Event, Run, StepRecord
from perdure.core.records import EventType

WIDTH = 760.0
"""Pixels of the time axis."""
LANE = 26.0
"""Pixels per lane."""
TOP = 22.0
"""Pixels above the first lane, for the axis labels."""
WAITING = ("WAITING_APPROVAL", "WAITING_EXTERNAL")
STOPPED = ("NEEDS_ATTENTION", "QUARANTINED")
"""Statuses in which a run waits for a person: its step in progress is not running."""
RAISED = ("NEEDS_ATTENTION", "QUARANTINED", "FAILED")


@dataclass(frozen=True, slots=True)
class Bar:
    """A span of a lane: ``kind`` is ``step``, ``running`` (a worker holds it now), ``queued``
    (no worker holds it yet), ``stopped`` (a person must look), ``killed`` (an attempt whose
    worker died: from its claim to the takeover), ``backoff`` or ``wait``."""

    x: float
    width: float
    kind: str
    title: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment of a lane: ``kind`` is ``failed`` (an attempt failed, retried or not) or
    ``takeover``."""

    x: float
    kind: str
    title: str


@dataclass(frozen=True, slots=True)
class Spend:
    """What a step's model calls used: tokens (input and output) and cost."""

    tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.tokens + other.tokens, self.cost + other.cost)


@dataclass
class Lane:
    """One row of the chart."""

    seq: int | None
    """The step's number (None: a wait, or the step in progress)."""
    label: str
    kind: str
    start: datetime
    end: datetime
    seconds: float = 0.0
    attempt: int = 1
    spend: Spend = field(default_factory=Spend)
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    y: float = 0.0


@dataclass(frozen=True, slots=True)
class Tick:
    """A label of the time axis."""

    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    """The whole timeline: its lanes, axis ticks, size, span and total spend."""

    lanes: list[Lane]
    ticks: list[Tick]
    width: float
    height: float
    seconds: float
    spend: Spend


def spend_of(result: JSON) -> Spend:
    """Tokens and cost a model call's recorded reply names (none for anything else)."""
    if not isinstance(result, dict):
        return Spend()
    usage = result.get("usage")
    tokens = 0
    if isinstance(usage, dict):
        names = ("input_tokens", "output_tokens", "input", "output")
        tokens = sum(v for k, v in usage.items() if k in names and isinstance(v, int))
    cost = sum(
        float(v)
        for k in ("cost", "lost_cost")
        if isinstance(v := result.get(k), int | float) and not isinstance(v, bool)
    )
    return Spend(tokens, cost)


def chart(
    run: Run,
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    effects: Sequence[EffectRecord],
    now: datetime,
) -> Chart:
    """The timeline of ``run`` from its committed ``steps``, its ``events`` (retries,
    takeovers, waits) and its ``effects`` (what the model calls spent), up to ``now`` while
    it is not finished."""
    spent: dict[int, Spend] = {}
    for e in effects:
        if e.target == MODEL_TARGET:
            spent[e.step_seq] = spent.get(e.step_seq, Spend()) + spend_of(e.result)
    lanes = [
        Lane(
            s.seq,
            s.name,
            str(s.outcome),
            s.started_at,
            s.finished_at,
            spend=spent.get(s.seq, Spend()),
        )
        for s in sorted(steps, key=lambda s: s.seq)
    ]
    finished = run.status.value in ("SUCCEEDED", "FAILED", "CANCELLED")
    last = max([run.created_at, *(s.finished_at for s in steps)])
    end = run.updated_at if finished else max(now, run.updated_at)
    current = None
    claims = [e.at for e in events if e.type is EventType.CLAIMED and e.at >= last]
    stopped = run.status.value in STOPPED
    if not finished and run.next_step is not None and run.status.value not in WAITING:
        seq = max((s.seq for s in steps), default=0) + 1
        # In progress only while a worker holds the run, from the claim that began this
        # attempt; otherwise it waits for a worker (unclaimed, or parked until a retry) or
        # stopped (a person must look), and is drawn so.
        held = run.owner is not None and not stopped and claims
        kind = "running" if held else "stopped" if stopped else "queued"
        since = claims[-1] if held else last
        current = Lane(None, run.next_step, kind, since, end, spend=spent.get(seq, Spend()))
        lanes.append(current)
    waits = _waits(events, end)
    origin = run.created_at
    ends = [end, *(w.end for w in waits), *_retry_times(events)]
    span = max((at - origin).total_seconds() for at in ends)
    scale = WIDTH / span if span > 0 else 0.0

    def x(at: datetime) -> float:
        return round(max((at - origin).total_seconds(), 0.0) * scale, 1)

    for lane in lanes:
        lane.seconds = max((lane.end - lane.start).total_seconds(), 0.0)
        title = f"{lane.label}: {lane.seconds:.3f} s"
        width = max(x(lane.end) - x(lane.start), 2.0)
        kind = lane.kind if lane is current else "step"
        if kind == "queued":
            title = f"{lane.label}: waiting for a worker, {lane.seconds:.3f} s"
        lane.bars.append(Bar(x(lane.start), width, kind, title))
    _marks(lanes, events, current, x)
    _killed(lanes, events, current, x)
    attempts = committed_attempts(events)
    for lane in lanes:
        lane.attempt = run.attempt if lane is current else attempts.get(lane.seq or 0, 1)
    for w in waits:
        w.seconds = max((w.end - w.start).total_seconds(), 0.0)
        title = f"{w.label}: {w.seconds:.3f} s"
        w.bars.append(Bar(x(w.start), max(x(w.end) - x(w.start), 2.0), "wait", title))
    ordered = sorted([*lanes, *waits], key=lambda lane: (lane.start, lane.seq or 0))
    for n, lane in enumerate(ordered):
        lane.y = TOP + n * LANE
    total = sum((lane.spend for lane in lanes), Spend())
    return Chart(ordered, _ticks(span, scale), WIDTH, TOP + len(ordered) * LANE + 4, span, total)


def _waits(events: Sequence[Event], end: datetime) -> list[Lane]:
    """A lane per wait: from a status change into WAITING_* to the change out of it."""
    waits: list[Lane] = []
    open_wait: Lane | None = None
    for e in events:
        if e.type is not EventType.STATUS or not isinstance(e.data, dict):
            continue
        to, was = e.data.get("to"), e.data.get("from")
        if open_wait is not None and was in WAITING:
            open_wait.end = e.at
            open_wait = None
        if to in WAITING:
            what = "approval" if to == "WAITING_APPROVAL" else "signal, timer or children"
            open_wait = Lane(None, f"waiting for {what}", "wait", e.at, end)
            waits.append(open_wait)
    return waits


def _marks(
    lanes: list[Lane],
    events: Sequence[Event],
    current: Lane | None,
    place: Callable[[datetime], float],
) -> None:
    """Put each failed attempt (``retry_scheduled``, with its wait until the retry) and each
    takeover on the lane of the step it interrupted: the first lane of that step that ended
    after it, else the step in progress."""
    for e in events:
        if e.type is EventType.RETRY_SCHEDULED:
            lane = _lane_of(lanes, e.step, e.at, current)
            if lane is None:
                continue
            data = e.data if isinstance(e.data, dict) else {}
            error = data.get("error")
            why = error.get("message") if isinstance(error, dict) else None
            lane.marks.append(Mark(place(e.at), "failed", f"attempt failed: {why or 'error'}"))
            wake = data.get("wake_at")
            if isinstance(wake, str):
                until = datetime.fromisoformat(wake)
                width = max(place(until) - place(e.at), 2.0)
                lane.bars.append(Bar(place(e.at), width, "backoff", f"retry at {wake}"))
        elif (
            e.type is EventType.STATUS
            and isinstance(e.data, dict)
            and e.data.get("from") == "RUNNING"
            and e.data.get("to") in RAISED
        ):
            lane = _lane_of(lanes, e.step, e.at, current) if e.step else current
            if lane is not None:
                lane.marks.append(Mark(place(e.at), "failed", f"step stopped: {e.data['to']}"))
        elif is_takeover(e) and isinstance(e.data, dict):
            lane = _lane_of(lanes, None, e.at, current)
            if lane is not None:
                gone = e.data.get("previous_owner")
                lane.marks.append(Mark(place(e.at), "takeover", f"taken over from {gone}"))


def _killed(
    lanes: list[Lane],
    events: Sequence[Event],
    current: Lane | None,
    place: Callable[[datetime], float],
) -> None:
    """Draw each attempt a crash killed: from the claim that began it to the takeover that
    ended it, on the lane of the step it was running (the one the takeover interrupted)."""
    began: datetime | None = None
    for e in sorted(events, key=lambda e: e.seq):
        if e.type is EventType.STEP_COMPLETED or e.type is EventType.RELEASED:
            began = None
        elif e.type is EventType.CLAIMED:
            if is_takeover(e) and began is not None:
                lane = _lane_of(lanes, None, e.at, current)
                if lane is not None:
                    width = max(place(e.at) - place(began), 2.0)
                    seconds = (e.at - began).total_seconds()
                    title = f"attempt killed after {seconds:.3f} s (its worker died)"
                    lane.bars.insert(0, Bar(place(began), width, "killed", title))
            began = e.at


def _retry_times(events: Sequence[Event]) -> list[datetime]:
    """When the retries the events scheduled are due (the chart reaches that far)."""
    found = []
    for e in events:
        wake = e.data.get("wake_at") if isinstance(e.data, dict) else None
        if e.type is EventType.RETRY_SCHEDULED and isinstance(wake, str):
            found.append(datetime.fromisoformat(wake))
    return found


def _lane_of(
    lanes: list[Lane], step: str | None, at: datetime, current: Lane | None
) -> Lane | None:
    for lane in lanes:
        if lane is current:
            continue
        if (step is None or lane.label == step) and lane.end >= at:
            return lane
    return current


def _ticks(span: float, scale: float) -> list[Tick]:
    """About five round labels along the axis (1, 2 or 5 times a power of ten seconds)."""
    if span <= 0:
        return [Tick(0.0, "0s")]
    raw = span / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(span // step)
    return [Tick(round(n * step * scale, 1), _seconds(n * step)) for n in range(count + 1)]


def _seconds(value: float) -> str:
    """``850ms``, ``12s``, ``3m20s``, ``2h5m``."""
    if value < 1 and value != 0:
        return f"{value * 1000:.0f}ms"
    if value < 60:
        return f"{value:g}s"
    if value < 3600:
        m, s = divmod(int(value), 60)
        return f"{m}m{s}s" if s else f"{m}m"
    h, m = divmod(int(value) // 60, 60)
    return f"{h}h{m}m" if m else f"{h}h"
