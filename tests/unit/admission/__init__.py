"""Unit tests of the admission algorithms (limits, queue, drain rate, ladder, Retry-After)."""
