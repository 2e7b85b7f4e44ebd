"""``python -m loadtests.embedding_backends``: see ``loadtests.embedding_backends.cli``."""

from loadtests.embedding_backends.cli import main

main()
