"""`python -m amc` runs the command line."""

from amc.cli.main import main

main()
