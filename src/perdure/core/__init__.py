"""The pure core: records, the run state machine, workflow definitions, effects, retry, budgets,
serialization and sealing. Nothing here does I/O."""
