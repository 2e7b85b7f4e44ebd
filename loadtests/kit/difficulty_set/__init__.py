"""The written difficulty evaluation set: hand-written and templated prompts, labelled.

``handwritten`` and ``handwritten_text`` hold the hand-written prompts, ``templates`` the
templated ones, ``passages`` the texts both quote (tests reuse them); ``build`` makes
``tests/data/difficulty_eval.jsonl`` from them (``python -m loadtests.kit.difficulty_set``
rewrites it; a test checks the committed file is what it makes); ``held_out`` is the
held-out evaluation the tests and ``loadtests.knn_vote`` share.
"""
