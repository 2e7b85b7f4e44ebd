"""One exchange with a replica, as the dispatch and relay stages drive it: the lease that holds
the replica and records how the attempt ended (``lease.py``), and the upstream event stream
re-framed for the client (``events.py``)."""
