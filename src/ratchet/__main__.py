"""``python -m ratchet`` runs the command line."""

from ratchet.cli import main

main()
