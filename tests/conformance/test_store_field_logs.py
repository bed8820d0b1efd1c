"""The conformance bodies of :mod:`perdure.testing.conformance.field_logs`, on each backend."""

from perdure.testing.conformance.field_logs import *  # noqa: F403
