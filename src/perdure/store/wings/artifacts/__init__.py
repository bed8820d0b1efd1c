"""The ``artifacts`` wing of the store: the artifact ledger: references recorded, committed,
collected.

Reached as ``store.artifacts``; its contract is
:class:`~perdure.store.wings.artifacts.contract.ArtifactStore`, its engine
:class:`~perdure.store.wings.artifacts.engine.ArtifactsWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
