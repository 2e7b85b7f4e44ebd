"""The running gateway: its live parts (``parts.Gateway``: policy holder, backend states,
admissions, caches, dispatcher, relay), which are what the request path's stages are given
(``path.flow.Services``), and the gateway's own requests through that path
(``own_requests.py``: summaries, and the backend's answer to a sampled cache hit)."""
