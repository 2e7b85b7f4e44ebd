"""Offline fitting and evaluation of the classifier's models, for the commands and benchmarks
(never on the request path): the heuristic's weights (``weights_fit.py``), the learned
difficulty model over embeddings (``router_fit.py``), the default text difficulty model
(``text_fit.py``) and its imitation of the embedding model (``distill.py``), logistic
regression (``logistic.py``; ``sparse_logistic.py`` for wide sparse designs), a binary
scorer's evaluation (``evaluation.py``) and a router's quality, APGR and CPT
(``routing_quality.py``)."""
