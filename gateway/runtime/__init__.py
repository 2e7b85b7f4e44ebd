"""The running gateway: its live parts (``parts.Gateway``), and the gateway's own requests
through the request path (``own_requests.py`` for summaries, ``hit_verification.py`` for
sampled verification of cache hits)."""
