"""The held-out prompts through ``latency-gateway route`` (the gateway's own stages, no
backend), for a router_quality row scored exactly as a policy routes: each prompt as one user
message to the policy's ``route: auto`` model, one JSON line each; the scores and pools the
command prints are what the row is made of."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def routed(policy: Path, prompts: Sequence[str]) -> tuple[list[float], list[str]]:
    """The difficulty score and the pool ``latency-gateway route`` gives each prompt."""
    lines = "".join(
        json.dumps({"messages": [{"role": "user", "content": p}]}) + "\n" for p in prompts
    )
    argv = [sys.executable, "-m", "gateway", "route", "--policy", str(policy)]
    done = subprocess.run(argv, input=lines, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"latency-gateway route failed: {done.stderr.strip()[-500:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(rows) != len(prompts) or any("score" not in r for r in rows):
        raise RuntimeError("latency-gateway route did not score every prompt")
    return [float(r["score"]) for r in rows], [str(r["pool"]) for r in rows]
