"""``python -m loadtests.cache_precision``: see ``loadtests.cache_precision.cli``."""

from loadtests.cache_precision.cli import main

main()
