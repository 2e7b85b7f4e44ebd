"""Benchmark: relayed tokens per second with ``serve --workers N``, 1 worker against 2."""
