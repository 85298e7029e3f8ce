"""``python -m lorebase`` runs the command line."""

from lorebase.cli.main import main

main()
