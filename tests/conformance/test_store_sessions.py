"""The conformance bodies of :mod:`perdure.testing.conformance.sessions`, on each backend."""

from perdure.testing.conformance.sessions import *  # noqa: F403
