"""``python -m perdure`` runs the command line."""

from perdure.cli.main import run

run()
