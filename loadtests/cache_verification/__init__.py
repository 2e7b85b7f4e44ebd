"""Benchmark: what sampled verification of semantic hits buys, and what it costs."""
