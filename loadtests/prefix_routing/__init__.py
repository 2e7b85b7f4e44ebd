"""Benchmark: prefix-cache hits, spread and TTFT, by routing and rewriting."""
