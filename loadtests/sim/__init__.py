"""The backend simulator: continuous-batching engines with vLLM and TGI personalities."""
