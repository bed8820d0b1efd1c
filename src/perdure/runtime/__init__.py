"""The runtime: runs workflows against a store (Runtime, execution loop, context, worker)."""
