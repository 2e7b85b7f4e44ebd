"""The request path: the stages one request passes, in the order they run."""
