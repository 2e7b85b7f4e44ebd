"""Benchmark: what the security checks add per request."""
