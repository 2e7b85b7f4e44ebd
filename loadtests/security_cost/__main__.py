"""``python -m loadtests.security_cost``: see ``loadtests.security_cost.cli``."""

from loadtests.security_cost.cli import main

main()
