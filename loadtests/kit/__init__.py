"""The shared kit of the load tests, reused by the benchmarks and by ``tests/``.

Servers and processes: ``serving`` (ASGI apps on uvicorn threads), ``fake_upstream`` (a fast
fake OpenAI-compatible server), ``ports`` (free loopback ports), ``processes`` (the simulated
fleet and the gateway as child processes). Data: ``routellm`` (RouteLLM's outcome tables),
``cache_pairs`` (QQP and the written near-miss question pairs), ``difficulty_set`` (the
written difficulty evaluation set); embeddings kept on disk: ``embedding_cache`` (keyed by the
text's SHA-1) and ``embedding_store`` (one file per model).
"""
