"""The ``graphs`` wing of the store: LangGraph threads' checkpoints, blobs and pending writes.

Reached as ``store.graphs``; its contract is
:class:`~perdure.store.wings.graphs.contract.GraphStore`, its engine
:class:`~perdure.store.wings.graphs.engine.GraphsWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
