"""Benchmark: the plan stage of an auto-routed request, per way of scoring the difficulty."""
