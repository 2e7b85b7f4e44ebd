"""Benchmark: the cost of the routing decision per request."""
