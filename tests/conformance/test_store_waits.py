"""The conformance bodies of :mod:`perdure.testing.conformance.waits`, on each backend."""

from perdure.testing.conformance.waits import *  # noqa: F403
