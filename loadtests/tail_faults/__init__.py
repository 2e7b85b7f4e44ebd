"""Tail faults after dispatch: stalls before the first token and deaths mid-stream (issue 32)."""
