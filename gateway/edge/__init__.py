"""The HTTP edge: routes, body reading, OpenAI request parsing, SSE framing, streaming
responses, disconnect watch, error rendering, OpenAPI and admin routes."""
