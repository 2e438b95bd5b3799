"""`python -m amc` runs the command line."""

from amc.cli import main

main()
