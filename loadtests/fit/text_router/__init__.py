"""Fit the bundled default (text) difficulty model on public outcomes."""
