"""The conformance bodies of :mod:`perdure.testing.conformance.threads`, on each backend."""

from perdure.testing.conformance.threads import *  # noqa: F403
