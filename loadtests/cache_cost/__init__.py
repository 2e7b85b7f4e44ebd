"""Benchmark: the semantic cache's lookup latency and the embedding latency under load."""
