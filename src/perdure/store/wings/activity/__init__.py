"""The ``activity`` wing of the store: tenants' event feeds, operator counts and the queue.

Reached as ``store.activity``; its contract is
:class:`~perdure.store.wings.activity.contract.ActivityStore`, its engine
:class:`~perdure.store.wings.activity.engine.ActivityWing`, its named queries
``sqlite.sql`` and ``postgres.sql`` beside them.
"""
