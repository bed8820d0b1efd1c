"""``python -m perdure`` runs the command line."""

from perdure.cli import main

main()
