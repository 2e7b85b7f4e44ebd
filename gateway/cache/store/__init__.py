"""Cache entries and where they live: the entry and its evidence (``entry.py``,
``evidence.py``), the keys of a request (``cache_keys.py``), what may be cached
(``eligibility.py``), the stores (``protocol.py``, ``memory_store.py``, ``redis_store.py``),
and an answer captured from the relay (``capture.py``) or replayed to a client
(``replay.py``)."""
