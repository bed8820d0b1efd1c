"""The store's wings: each capability beyond the kernel in a folder of its own.

A wing is reached as an attribute of the opened store (``store.memory``, ``store.graphs``, ...)
and is never mixed into the kernel's class. Its folder holds:

* ``contract.py``: the wing's Protocol, with the contract of every method;
* ``engine.py``: the one implementation, a class on
  :class:`~perdure.store.engine.base.EngineBase` that holds the database's driver;
* ``sqlite.sql`` and ``postgres.sql``: the wing's named queries (loaded with the kernel's by
  :func:`perdure.store.queries.queries`).

A wing may use the kernel engine's shared helpers (:mod:`perdure.store.engine.tx` and the
modules the commit calls); it never imports another wing or a kernel capability's class. Rows a
step boundary writes (savepoint marks, forks, memory writes) are written by the kernel's
commit, in its transaction; the wing reads and manages them. Migrations stay one numbered
sequence per dialect (``store/<dialect>/sql/``). See ``docs/wings.md`` for how to add one.
"""
