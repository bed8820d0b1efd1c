"""The conformance bodies of :mod:`perdure.testing.conformance.values`, on each backend."""

from perdure.testing.conformance.values import *  # noqa: F403
