"""The command line: ``latency-gateway serve | check | demo | route | fit-router | cache-curve |
schema | hash-key`` (``cli.py``), with the commands that are more than a few lines in their
own modules (``demo.py``, ``route_report.py``, ``cache_curve.py``)."""
