"""Benchmark: how often the semantic cache serves a right answer, on data nobody here wrote."""
