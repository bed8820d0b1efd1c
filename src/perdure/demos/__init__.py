"""Runnable demos: the temperature agent (crash before reply) and the brightness agent (crash
around a side effect on a device that does not deduplicate)."""
