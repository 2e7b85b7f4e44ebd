"""Open-loop load generator for OpenAI-compatible streaming endpoints."""
