"""The conformance bodies of :mod:`perdure.testing.conformance.lifecycle`, on each backend."""

from perdure.testing.conformance.lifecycle import *  # noqa: F403
