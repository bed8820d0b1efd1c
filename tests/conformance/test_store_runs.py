"""The conformance bodies of :mod:`perdure.testing.conformance.runs`, on each backend."""

from perdure.testing.conformance.runs import *  # noqa: F403
