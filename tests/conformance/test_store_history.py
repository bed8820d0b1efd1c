"""The conformance bodies of :mod:`perdure.testing.conformance.history`, on each backend."""

from perdure.testing.conformance.history import *  # noqa: F403
