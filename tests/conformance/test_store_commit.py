"""The conformance bodies of :mod:`perdure.testing.conformance.commit`, on each backend."""

from perdure.testing.conformance.commit import *  # noqa: F403
