"""An app module whose import fails with something other than ImportError."""

raise RuntimeError("the settings file is missing")
