"""Offline fitting and evaluation of the classifier's models, for the commands and benchmarks
(never on the request path): the heuristic's weights (``weights_fit.py``), the learned
difficulty model (``router_fit.py``), logistic regression (``logistic.py``), a binary
scorer's evaluation (``evaluation.py``) and a router's quality, APGR and CPT
(``routing_quality.py``)."""
