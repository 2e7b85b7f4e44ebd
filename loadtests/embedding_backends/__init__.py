"""Benchmark: all-MiniLM-L6-v2 on sentence-transformers' torch backend against its ONNX one."""
