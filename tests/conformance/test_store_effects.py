"""The conformance bodies of :mod:`perdure.testing.conformance.effects`, on each backend."""

from perdure.testing.conformance.effects import *  # noqa: F403
