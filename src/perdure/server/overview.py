"""The overview page's chart of runs by status over time: one stacked column per hour (or day)
of creation, each segment the runs of that period now in one status. Geometry only; the
template draws it as SVG. Every period of the window has a column, empty ones too, so the
time axis is to scale."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from perdure.core.model import RunStatus
from perdure.core.observed import PeriodCount

HEIGHT = 160.0
"""Pixels of the tallest column."""
COLUMN = 22.0
"""Pixels per period (the column and its gap)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Runs of one status within a column."""

    status: str
    count: int
    y: float
    height: float


@dataclass
class Column:
    """One period: its label, its runs in all and by status, stacked."""

    period: str
    label: str
    x: float
    total: int = 0
    segments: list[Segment] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Bars:
    """The chart: its columns, the largest column's count, its size, the statuses present."""

    columns: list[Column]
    most: int
    width: float
    height: float
    statuses: list[str]


def status_bars(
    found: Sequence[PeriodCount], since: datetime, now: datetime, *, daily: bool
) -> Bars:
    """The columns of every period from ``since`` to ``now`` with the counts ``found``."""
    step = timedelta(days=1) if daily else timedelta(hours=1)
    width = 10 if daily else 13
    periods: list[str] = []
    at = since
    while at <= now and len(periods) < 1000:
        periods.append(at.isoformat()[:width])
        at += step
    by: dict[str, dict[str, int]] = {p: {} for p in periods}
    for c in found:
        by.setdefault(c.period, {})[c.status.value] = c.count
    order = [s.value for s in RunStatus]
    most = max((sum(v.values()) for v in by.values()), default=0)
    scale = HEIGHT / most if most else 0.0
    columns = []
    for n, period in enumerate(sorted(by)):
        label = period[5:10] if daily else period[11:13] + ":00"
        column = Column(period, label, n * COLUMN)
        top = HEIGHT
        for status in order:
            count = by[period].get(status, 0)
            if not count:
                continue
            h = round(count * scale, 1)
            top -= h
            column.segments.append(Segment(status, count, round(top, 1), h))
            column.total += count
        columns.append(column)
    present = [s for s in order if any(s in v for v in by.values())]
    return Bars(columns, most, len(columns) * COLUMN, HEIGHT, present)
