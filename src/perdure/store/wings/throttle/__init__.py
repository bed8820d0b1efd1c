"""The ``throttle`` wing of the store: failed credential checks per subject (a client address,
a key id), shared by every server on the database.

Reached as ``store.throttle``; its contract is
:class:`~perdure.store.wings.throttle.contract.ThrottleStore`, its engine
:class:`~perdure.store.wings.throttle.engine.ThrottleWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
