"""The conformance bodies of :mod:`perdure.testing.conformance.streams`, on each backend."""

from perdure.testing.conformance.streams import *  # noqa: F403
