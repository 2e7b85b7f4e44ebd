"""``python -m loadtests.cache_cost``: see ``loadtests.cache_cost.cli``."""

from loadtests.cache_cost.cli import main

main()
