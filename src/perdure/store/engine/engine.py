""":class:`Engine`: every capability of :mod:`perdure.store.engine` in one class, the
:class:`~perdure.store.base.Store` on any database a :class:`~perdure.store.driver.Driver`
reaches."""

from __future__ import annotations

from perdure.store.base import Store
from perdure.store.engine.access import Access
from perdure.store.engine.archive import Archive
from perdure.store.engine.artifacts import Artifacts
from perdure.store.engine.checkpoints import GraphCheckpoints
from perdure.store.engine.children import Children
from perdure.store.engine.commits import Commits
from perdure.store.engine.effects import Effects
from perdure.store.engine.fleet import Fleet
from perdure.store.engine.history import History
from perdure.store.engine.memory import Memory
from perdure.store.engine.retention import Retention
from perdure.store.engine.runs import Runs
from perdure.store.engine.sessions import Sessions
from perdure.store.engine.streams import Streams
from perdure.store.engine.threads import Threads
from perdure.store.engine.versions import Versions
from perdure.store.engine.waits import Waits


class Engine(
    Versions,
    Runs,
    Commits,
    Effects,
    Waits,
    Fleet,
    Threads,
    Streams,
    GraphCheckpoints,
    Access,
    Sessions,
    History,
    Artifacts,
    Retention,
    Archive,
    Children,
    Memory,
):
    """:class:`~perdure.store.base.Store` on any database a :class:`Driver` reaches:
    ``Engine(driver)``. Each base class brings the methods of one capability; they share only
    the driver (:class:`~perdure.store.engine.base.EngineBase`)."""

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: the driver listens, or returns False at once."""
        return self.driver.wait_for_work(timeout)

    def close(self) -> None:
        """See :meth:`Store.close`."""
        self.driver.close()


_: type[Store] = Engine
"""The type checker holds :class:`Engine` to the :class:`~perdure.store.base.Store` protocol
here: a method missing, or one whose signature differs, fails the check."""
