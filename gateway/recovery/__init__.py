"""After dispatch: what the gateway does for a request already on a replica. When to race a
late first token or give up on a stalled replica (``hedging.py``), which requests found
queued inside an engine to take back (``take_back.py``), and how a stream cut short is
continued on another replica (``continuation.py``). Pure decisions; the request path's
exchange (``path/exchange``) acts on them."""
