"""The response cache: exact, then semantic.

``response_cache.py`` is the cache a request asks (lookup, capture, store); ``live_cache.py``
keeps it (and the embedder it shares with routing) in step with the policy. Below them, one
subpackage per subsystem: ``store/`` (entries, their keys, the memory and Redis stores,
capture and replay of answers), ``index/`` (the FAISS index and its worker thread),
``judgement/`` (may a cached answer serve the asked question: the verifier, the guard and
their features) and ``verification/`` (sampled verification of semantic hits against the
backend).
"""
