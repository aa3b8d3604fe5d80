"""``python -m fsxlt`` runs the command line."""

from fsxlt.cli import main

main()
