"""The conformance bodies of :mod:`perdure.testing.conformance.leases`, on each backend."""

from perdure.testing.conformance.leases import *  # noqa: F403
