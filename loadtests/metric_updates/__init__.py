"""Instructions of one request's metric updates and access-log redaction (``cli.py``)."""
