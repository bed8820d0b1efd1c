""":class:`Engine`: the store's kernel on any database a :class:`~perdure.store.driver.Driver`
reaches, with its wings attached: the :class:`~perdure.store.base.Store`."""

from __future__ import annotations

from perdure.store.base import Store
from perdure.store.driver import Driver
from perdure.store.engine.children import ChildrenEngine
from perdure.store.engine.commits import CommitsEngine
from perdure.store.engine.effects import EffectsEngine
from perdure.store.engine.fleet import FleetEngine
from perdure.store.engine.runs import RunsEngine
from perdure.store.engine.streams import StreamsEngine
from perdure.store.engine.threads import ThreadsEngine
from perdure.store.engine.versions import VersionsEngine
from perdure.store.engine.waits import WaitsEngine
from perdure.store.wings.access.engine import AccessWing
from perdure.store.wings.activity.engine import ActivityWing
from perdure.store.wings.archive.engine import ArchiveWing
from perdure.store.wings.artifacts.engine import ArtifactsWing
from perdure.store.wings.graphs.engine import GraphsWing
from perdure.store.wings.history.engine import HistoryWing
from perdure.store.wings.memory.engine import MemoryWing
from perdure.store.wings.retention.engine import RetentionWing
from perdure.store.wings.throttle.engine import ThrottleWing


class Engine(
    VersionsEngine,
    RunsEngine,
    CommitsEngine,
    EffectsEngine,
    WaitsEngine,
    FleetEngine,
    ThreadsEngine,
    StreamsEngine,
    ChildrenEngine,
):
    """:class:`~perdure.store.base.Store` on any database a :class:`Driver` reaches:
    ``Engine(driver)``. Each base class brings the kernel methods of one capability; they share
    only the driver (:class:`~perdure.store.engine.base.EngineBase`). Each wing is an object of
    its own on the same driver, an attribute named after it (``store.memory``, ...): never a
    base class."""

    def __init__(self, driver: Driver) -> None:
        super().__init__(driver)
        self.graphs = GraphsWing(driver)
        self.access = AccessWing(driver)
        self.activity = ActivityWing(driver)
        self.memory = MemoryWing(driver)
        self.history = HistoryWing(driver)
        self.artifacts = ArtifactsWing(driver)
        self.retention = RetentionWing(driver)
        self.archive = ArchiveWing(driver)
        self.throttle = ThrottleWing(driver)

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: the driver listens, or returns False at once."""
        return self.driver.wait_for_work(timeout)

    def close(self) -> None:
        """See :meth:`Store.close`."""
        self.driver.close()


_: type[Store] = Engine
"""The type checker holds :class:`Engine` to the :class:`~perdure.store.base.Store` protocol
here: a method or wing missing, or a signature that differs, fails the check."""
