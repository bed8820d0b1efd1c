"""The conformance bodies of :mod:`perdure.testing.conformance.children`, on each backend."""

from perdure.testing.conformance.children import *  # noqa: F403
