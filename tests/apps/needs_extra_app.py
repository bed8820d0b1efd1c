"""An app whose import needs an optional package that is not there (as a machine without
``perdure[anthropic]`` would see it)."""

raise ModuleNotFoundError("No module named 'anthropic'", name="anthropic")
