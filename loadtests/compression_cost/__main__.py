"""``python -m loadtests.compression_cost``: see ``loadtests.compression_cost.cli``."""

from loadtests.compression_cost.cli import main

main()
