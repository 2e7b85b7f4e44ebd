"""Benchmark: the cost of the compression stage per request, and of the summary fact check."""
