"""The ``retention`` wing of the store: deleting finished runs and erasing threads or runs.

Reached as ``store.retention``; its contract is
:class:`~perdure.store.wings.retention.contract.RetentionStore`, its engine
:class:`~perdure.store.wings.retention.engine.RetentionWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
