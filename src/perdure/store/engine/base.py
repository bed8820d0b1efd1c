"""What every part of the engine holds: the database's driver, and what it says of the store."""

from __future__ import annotations

from perdure.store.driver import Driver


class EngineBase:
    """The base of every capability class of :mod:`perdure.store.engine` (``Runs``,
    ``Commits``, ``Effects``, ...): the :class:`~perdure.store.driver.Driver` they speak to the
    database through, and the three attributes of :class:`~perdure.store.base.Store` it gives.
    A capability's methods read these and call each other, never a method of another
    capability: what two capabilities share is a plain function that takes the driver or an
    open transaction (:mod:`perdure.store.engine.tx`, or a helper of a capability's module)."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        """The database's connections, transactions and conventions."""
        self.url = driver.url
        """The database URL the store was opened with."""
        self.notifies = driver.notifies
        """True when :meth:`~perdure.store.base.Store.wait_for_work` really waits for
        notifications."""
        self.parallel_writes = driver.parallel_writes
        """True when write transactions on different connections run side by side."""
