"""Benchmark: what one cross-encoder verification of a semantic hit costs on this machine."""
