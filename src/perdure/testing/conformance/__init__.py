"""The store's conformance suite, shipped with perdure so that any backend can prove itself.

One module per capability: the kernel's (``runs``, ``leases``, ``commit``, ``group_commit``,
``effects``, ``waits``, ``retries``, ``versions``, ``threads``, ``streams``, ``children``,
``values``, ``field_logs``) and one or more per wing (``access`` and ``sessions``,
``checkpoints`` for ``graphs``, ``memory`` and ``memory_vectors``, ``history``, ``lifecycle``
for history, artifacts and retention). A wing's module skips itself on a store without that
wing, so a backend that ships the kernel alone passes the kernel's modules and skips the rest.

The bodies are plain pytest tests that ask for two fixtures, which the backend's own
``conftest.py`` provides:

* ``store``: a fresh, migrated :class:`~perdure.store.base.Store`, isolated from every other
  test, closed after it;
* ``clock``: a :class:`~perdure.core.clock.FakeClock` (``perdure.testing.FakeClock``).

Then one test file per module brings its bodies in::

    # tests/test_conformance_runs.py
    from perdure.testing.conformance.runs import *  # noqa: F403

perdure runs its own backends through exactly these modules (``tests/conformance/``), on a
SQLite file and on PostgreSQL. Importing this package needs pytest
(``pip install 'perdure[testing]'``); nothing else in perdure imports it.
"""
