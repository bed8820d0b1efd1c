"""The conformance bodies of :mod:`perdure.testing.conformance.versions`, on each backend."""

from perdure.testing.conformance.versions import *  # noqa: F403
