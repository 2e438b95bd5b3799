"""``python -m amc.cli`` (e.g. under ``accelerate launch -m amc.cli train ...``)."""

from amc.cli.main import main

main()
