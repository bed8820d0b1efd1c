"""The conformance bodies of :mod:`perdure.testing.conformance.throttle`, on each backend."""

from perdure.testing.conformance.throttle import *  # noqa: F403
