"""Benchmark: the difficulty scores as a strong/weak router, on held-out public outcomes."""
