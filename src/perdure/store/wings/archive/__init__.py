"""The ``archive`` wing of the store: a run's rows out to the cold tier and back.

Reached as ``store.archive``; its contract is
:class:`~perdure.store.wings.archive.contract.ArchiveStore`, its engine
:class:`~perdure.store.wings.archive.engine.ArchiveWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
