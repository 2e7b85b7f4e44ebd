"""Benchmark: what cluster admission's Redis leases cost, and how fast Redis trouble is absorbed."""
