"""Nearest-neighbour search over cached questions: the FAISS index per scope
(``faiss_index.py``) and the worker thread that writes it off the event loop
(``index_worker.py``)."""
