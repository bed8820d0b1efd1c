"""The conformance bodies of :mod:`perdure.testing.conformance.access`, on each backend."""

from perdure.testing.conformance.access import *  # noqa: F403
