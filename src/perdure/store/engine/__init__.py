"""The one write path: every :class:`~perdure.store.base.Store` method, written once for every
database.

:class:`Engine` holds a :class:`~perdure.store.driver.Driver` and speaks to the database only
through it: named queries of the dialect's ``sql/queries.sql`` inside the driver's
transactions, times and lists in the driver's form, rows mapped by
:mod:`perdure.store.rows`. The guards, the batching, the events and every decision are here, so
SQLite and PostgreSQL cannot drift apart; a driver adds only what its database needs.

The methods are written by capability, each in a module of this package, as a class on
:class:`~perdure.store.engine.base.EngineBase` (which holds the driver, ``url`` and
``notifies``, and nothing else a capability may read); :class:`Engine`
(:mod:`~perdure.store.engine.engine`) is all of them:

* :mod:`~perdure.store.engine.runs`: runs, leases, status changes, retries, history reads;
* :mod:`~perdure.store.engine.commits`: the step-boundary commit;
* :mod:`~perdure.store.engine.effects`: the effect ledger;
* :mod:`~perdure.store.engine.waits`: approvals, signals, resumes, requests;
* :mod:`~perdure.store.engine.versions`: migrations and upgrades of stored runs;
* :mod:`~perdure.store.engine.fleet`: workers, the watchdog, timers;
* :mod:`~perdure.store.engine.threads`: one writer per thread, thread policies, the inbox;
* :mod:`~perdure.store.engine.streams`: durable token streams;
* :mod:`~perdure.store.engine.checkpoints`: LangGraph threads' checkpoints, blobs and writes;
* :mod:`~perdure.store.engine.access`: API keys, event feeds, operator counts;
* :mod:`~perdure.store.engine.history`: state history, savepoints, fork lineage;
* :mod:`~perdure.store.engine.artifacts`: artifact references;
* :mod:`~perdure.store.engine.retention`: deleting finished runs, erasing threads;
* :mod:`~perdure.store.engine.archive`: a run's rows out and back in (cold tier);
* :mod:`~perdure.store.engine.children`: a run's child runs, waking a parent.

What capabilities share is a plain function that takes the driver or an open transaction:
:mod:`~perdure.store.engine.tx` (events, fields, messages, guards), and helpers of a
capability's module that another calls inside its transaction (the thread inbox, waking a
parent, savepoints and forks of a commit); :mod:`~perdure.store.engine.plain_steps` is the
one-statement commit of plain boundaries.
"""

from __future__ import annotations

from perdure.store.engine.engine import Engine

__all__ = ["Engine"]
