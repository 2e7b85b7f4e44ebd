"""May the answer cached for one question serve another? The verdict at the user's bound
(``verdict.py``), the verifier (``verifier.py``, weights in ``verifier.npz``) over the pair's
features (``pair_features.py``), and the false-hit guard (``guard.py``, ``lexicon.py``,
``antonyms.py``)."""
