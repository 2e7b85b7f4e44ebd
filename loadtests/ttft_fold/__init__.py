"""The TTFT model's per-request cost, folded against one update at a time."""
