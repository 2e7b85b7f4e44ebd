"""Benchmark: difficulty proxies tried for the default model (step count, a GSM8K-likeness gate)."""
