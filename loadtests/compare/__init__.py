"""Comparison benchmark: one workload through the gateway and straight to the fleet."""
