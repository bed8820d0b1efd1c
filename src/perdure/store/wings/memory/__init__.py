"""The ``memory`` wing of the store: long-term memory: reads, search, erasure, expiry (writes ride
the commit).

Reached as ``store.memory``; its contract is
:class:`~perdure.store.wings.memory.contract.MemoryStore`, its engine
:class:`~perdure.store.wings.memory.engine.MemoryWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
