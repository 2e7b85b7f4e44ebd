"""latency-gateway: a latency-aware OpenAI-compatible gateway for LLM inference servers."""

__version__ = "0.1.0"
