"""The conformance bodies of :mod:`perdure.testing.conformance.group_commit`, on each backend."""

from perdure.testing.conformance.group_commit import *  # noqa: F403
