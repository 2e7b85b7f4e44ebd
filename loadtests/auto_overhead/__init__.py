"""Benchmark: what scoring ``route: auto`` adds to a request's gateway overhead and memory."""
