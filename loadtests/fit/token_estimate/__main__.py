"""``python -m loadtests.fit.token_estimate``: see ``loadtests.fit.token_estimate.cli``."""

from loadtests.fit.token_estimate.cli import main

main()
