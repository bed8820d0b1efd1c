"""``python -m perdure`` runs the command line."""

from perdure.cli.entry import run

run()
