"""CPU instructions per request of the gateway, counted by callgrind (``cli.py``)."""
