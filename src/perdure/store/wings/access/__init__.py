"""The ``access`` wing of the store: API keys and dashboard sessions.

Reached as ``store.access``; its contract is
:class:`~perdure.store.wings.access.contract.AccessStore`, its engine
:class:`~perdure.store.wings.access.engine.AccessWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
