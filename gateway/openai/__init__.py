"""The OpenAI HTTP API as the gateway speaks it, below the request path: the endpoint table
(``endpoints.py``), the parsed request (``request.py``) and its validation (``parse.py``), the
reading of chat messages (``messages.py``), body reading under limits (``body.py``), SSE
framing (``sse.py``), the streaming response (``streaming.py``), the disconnect watch
(``disconnect.py``) and JSON responses (``json_response.py``). It knows nothing of the
policy or the path; everything above it may use it."""
