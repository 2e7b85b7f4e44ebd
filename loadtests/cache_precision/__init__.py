"""Benchmark: precision and recall of the cache's match decision on hand-labelled pairs."""
