"""``python -m loadtests.kit.difficulty_set``: rewrite ``tests/data/difficulty_eval.jsonl``."""

from loadtests.kit.difficulty_set.build import main

main()
