"""The conformance bodies of :mod:`perdure.testing.conformance.checkpoints`, on each backend."""

from perdure.testing.conformance.checkpoints import *  # noqa: F403
