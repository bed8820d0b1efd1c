"""The one write path of the store's kernel: every kernel method of
:class:`~perdure.store.base.Store`, written once for every database.

:class:`~perdure.store.engine.engine.Engine` holds a :class:`~perdure.store.driver.Driver` and
speaks to the database only through it: named queries inside the driver's transactions, times
and lists in the driver's form, rows mapped by :mod:`perdure.store.rows`. The guards, the
batching, the events and every decision are here, so SQLite and PostgreSQL cannot drift apart;
a driver adds only what its database needs.

The kernel methods are written by capability, each a class on
:class:`~perdure.store.engine.base.EngineBase` in a module of this package:

* :mod:`~perdure.store.engine.runs`: runs, leases, status changes, retries, reads of a run;
* :mod:`~perdure.store.engine.commits`: the step-boundary commit;
* :mod:`~perdure.store.engine.effects`: the effect ledger;
* :mod:`~perdure.store.engine.waits`: approvals, signals, resumes, requests;
* :mod:`~perdure.store.engine.versions`: migrations and upgrades of stored runs;
* :mod:`~perdure.store.engine.fleet`: workers, the watchdog, timers;
* :mod:`~perdure.store.engine.threads`: one writer per thread, thread policies, the inbox;
* :mod:`~perdure.store.engine.streams`: durable token streams;
* :mod:`~perdure.store.engine.children`: a run's child runs, waking a parent.

What capabilities share is a plain function that takes the driver or an open transaction:
:mod:`~perdure.store.engine.tx` (events, fields, messages, guards, artifact references), the
rows a boundary writes for a wing (:mod:`~perdure.store.engine.lineage`: savepoint marks and
forks; :mod:`~perdure.store.engine.memory_writes`: memory writes) and
:mod:`~perdure.store.engine.plain_steps`, the one-statement commit of plain boundaries. The
wings (:mod:`perdure.store.wings`) build on the same helpers; the kernel never imports a wing
except to attach it (:mod:`~perdure.store.engine.engine`).
"""
