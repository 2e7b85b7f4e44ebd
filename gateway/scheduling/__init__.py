"""Endpoint selection: filters, then a picker."""
