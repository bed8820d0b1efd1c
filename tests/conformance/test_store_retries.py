"""The conformance bodies of :mod:`perdure.testing.conformance.retries`, on each backend."""

from perdure.testing.conformance.retries import *  # noqa: F403
