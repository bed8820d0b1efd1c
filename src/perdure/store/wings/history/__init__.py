"""The ``history`` wing of the store: state history, savepoints and fork lineage.

Reached as ``store.history``; its contract is
:class:`~perdure.store.wings.history.contract.HistoryStore`, its engine
:class:`~perdure.store.wings.history.engine.HistoryWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
