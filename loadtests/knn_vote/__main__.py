"""``python -m loadtests.knn_vote``: see ``loadtests.knn_vote.cli``."""

from loadtests.knn_vote.cli import main

main()
