"""The ``perdure`` command line: one module per group of verbs, plus rendering."""
