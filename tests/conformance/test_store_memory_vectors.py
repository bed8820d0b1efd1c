"""The conformance bodies of :mod:`perdure.testing.conformance.memory_vectors`, on each backend."""

from perdure.testing.conformance.memory_vectors import *  # noqa: F403
