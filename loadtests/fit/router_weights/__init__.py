"""Fit the bundled difficulty model on RouteLLM's training halves."""
