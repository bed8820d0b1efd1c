"""The run page's step graph: the workflow's steps and the ``next=`` edges they declare (what
``perdure workflows`` prints), laid out in columns by distance from the start step, with the
steps this run committed, the edges it took and the step it is on marked. Geometry only; the
template draws it as SVG.

A forward edge is a curve from one column to a later one; an edge back (a loop such as
``think -> act -> think``) or within a column arcs below the boxes, a step that goes to itself
has a small loop above its box."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perdure.core.workflow import Workflow

BOX_W = 132.0
BOX_H = 30.0
GAP_X = 56.0
GAP_Y = 22.0
PAD = 14.0


@dataclass(frozen=True, slots=True)
class Node:
    """A step's box: ``state`` is ``current`` (the step the run is on), ``done`` (committed at
    least ``visits`` times) or ``idle``."""

    name: str
    x: float
    y: float
    state: str
    visits: int
    start: bool


@dataclass(frozen=True, slots=True)
class Edge:
    """A declared edge as an SVG path; ``taken`` when this run went that way."""

    source: str
    target: str
    path: str
    taken: bool


@dataclass(frozen=True, slots=True)
class Graph:
    """The laid-out graph and its size."""

    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float
    box_w: float = BOX_W
    box_h: float = BOX_H


def layout(wf: Workflow[Any], path: Sequence[str], current: str | None) -> Graph:
    """Lay out ``wf``'s steps; ``path`` is the names of the steps the run committed, in order,
    and ``current`` the step it runs or waits in next (None: finished)."""
    depth = _depths(wf)
    columns: dict[int, list[str]] = {}
    for name in wf.steps:  # declaration order within a column
        columns.setdefault(depth[name], []).append(name)
    rows = max((len(c) for c in columns.values()), default=1)
    where: dict[str, tuple[float, float]] = {}
    for col, names in columns.items():
        for row, name in enumerate(names):
            where[name] = (PAD + col * (BOX_W + GAP_X), PAD + 14 + row * (BOX_H + GAP_Y))
    visits: dict[str, int] = {}
    for name in path:
        visits[name] = visits.get(name, 0) + 1
    walked = list(path) + ([current] if current else [])
    taken = set(itertools.pairwise(walked))
    nodes = [
        Node(
            name,
            *where[name],
            "current" if name == current else ("done" if visits.get(name) else "idle"),
            visits.get(name, 0),
            name == wf.start,
        )
        for name in wf.steps
    ]
    edges = [
        Edge(a, b, _path(where[a], where[b], depth[a], depth[b]), (a, b) in taken)
        for a, step in wf.steps.items()
        for b in sorted(step.next)
        if b in where
    ]
    width = PAD * 2 + len(columns) * BOX_W + max(len(columns) - 1, 0) * GAP_X
    height = PAD * 2 + 14 + rows * BOX_H + (rows - 1) * GAP_Y + 24  # room for arcs below
    return Graph(nodes, edges, width, height)


def _depths(wf: Workflow[Any]) -> dict[str, int]:
    """Each step's distance from the start (breadth first); steps the start never reaches
    (compensators, steps only a person resumes at) go in a column after the rest."""
    depth = {wf.start: 0}
    queue = [wf.start]
    while queue:
        name = queue.pop(0)
        for nxt in sorted(wf.steps[name].next):
            if nxt in wf.steps and nxt not in depth:
                depth[nxt] = depth[name] + 1
                queue.append(nxt)
    after = max(depth.values(), default=-1) + 1
    return {name: depth.get(name, after) for name in wf.steps}


def _path(a: tuple[float, float], b: tuple[float, float], da: int, db: int) -> str:
    """An SVG path from box ``a`` to box ``b``."""
    (ax, ay), (bx, by) = a, b
    if a == b:  # a step that goes to itself
        x0, x1, y = ax + BOX_W * 0.35, ax + BOX_W * 0.65, ay
        return f"M{x0:.1f},{y:.1f} C{x0:.1f},{y - 26:.1f} {x1:.1f},{y - 26:.1f} {x1:.1f},{y:.1f}"
    if db > da:  # forward: right side to left side
        x0, y0, x1, y1 = ax + BOX_W, ay + BOX_H / 2, bx, by + BOX_H / 2
        mid = (x0 + x1) / 2
        return f"M{x0:.1f},{y0:.1f} C{mid:.1f},{y0:.1f} {mid:.1f},{y1:.1f} {x1:.1f},{y1:.1f}"
    x0, y0 = ax + BOX_W / 2 + 8, ay + BOX_H  # back or within a column: an arc below
    x1, y1 = bx + BOX_W / 2 - 8, by + BOX_H
    low = max(y0, y1) + 22 + abs(x0 - x1) * 0.05
    return f"M{x0:.1f},{y0:.1f} C{x0:.1f},{low:.1f} {x1:.1f},{low:.1f} {x1:.1f},{y1:.1f}"
