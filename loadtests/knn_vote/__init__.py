"""Benchmark: does a kNN vote over embedded exemplars improve the difficulty score?"""
