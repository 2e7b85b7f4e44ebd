"""Sampled verification of semantic hits: a share of hits is asked of the backend in the
background (``sampling.py``) and the answers compared (``answer_match.py``); disagreements
tighten the entry's evidence."""
