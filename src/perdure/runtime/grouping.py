"""How a runtime groups its runs' commits: :class:`GroupCommit`, the option a user gives
(``Runtime(group_commit=...)``, ``perdure worker --group-*``); the grouping itself is
:mod:`perdure.runtime.execution.group_commit`."""

from __future__ import annotations

from dataclasses import dataclass

from perdure.core.errors import ConfigError
from perdure.runtime.settings import setting


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """How a runtime groups its runs' commits (``Runtime(group_commit=...)``).

    ``max_batch``: the most runs one transaction carries (1 turns grouping off).
    ``max_wait``: seconds a leader waits for more commits before it writes (0: never waits;
    a commit that finds nobody else pending goes at once).
    ``in_flight``: the most groups written at once, each in a transaction of its own, on a
    store whose transactions write side by side (PostgreSQL; SQLite writes one at a time, so
    there it is always 1, as it is while ``max_wait`` is above 0). More groups at once means
    smaller ones: more transactions and more CPU per step, for a server that has CPU to spare
    but makes each transaction wait (a distant one). Keep it below the pool's connections (8
    by default): the heartbeat, the worker's claims and the effects' groups need them too.
    """

    max_batch: int = 64
    max_wait: float = 0.0
    in_flight: int = 1

    def __post_init__(self) -> None:
        setting("group_commit max_batch", self.max_batch, 1, 10_000, unit="runs")
        setting("group_commit max_wait", self.max_wait, 0, 1)
        setting("group_commit in_flight", self.in_flight, 1, 64, unit="groups")
        for name, value, unit, high in (
            ("max_batch", self.max_batch, "runs", 10_000),
            ("in_flight", self.in_flight, "groups", 64),
        ):
            if not isinstance(value, int):
                raise ConfigError(
                    f"group_commit {name} {value!r} is not a whole number of {unit}",
                    fix=f"give {name} a whole number from 1 to {high}",
                )
