"""Unit tests of the gateway's pure modules."""
