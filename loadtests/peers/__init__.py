"""Side-by-side comparison with peer gateways (LiteLLM, vllm-router, nginx); see ``cli``."""
