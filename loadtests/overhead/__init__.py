"""Benchmark: what the gateway adds over going direct to a fast upstream on loopback."""
