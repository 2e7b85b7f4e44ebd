"""``latency-gateway demo``: a simulated fleet (2 small + 2 large replicas) behind the gateway.

The fleet runs in a child process (``python -m loadtests.sim``) so it has its own core; the
gateway serves ``policies/demo.yaml`` in this process until Ctrl-C, then the fleet stops.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType

from loadtests.loadgen.processes import running
from loadtests.sim.fleet import FleetConfig, load_fleet

ROOT = Path(__file__).resolve().parent.parent
DEMO_POLICY = ROOT / "policies" / "demo.yaml"
DEMO_FLEET = ROOT / "loadtests" / "sim" / "fleets" / "demo.yaml"


def replica_urls(fleet: FleetConfig) -> list[str]:
    return [
        f"http://{fleet.host}:{group.base_port + i}"
        for group in fleet.groups
        for i in range(group.replicas)
    ]


def banner(host: str, port: int) -> str:
    base = f"http://{host}:{port}"
    return f"""
latency-gateway demo is up: simulated vLLM fleet (2 x Qwen2.5-1.5B, 2 x Llama-3.1-70B)
  OpenAI API   {base}/v1          models: fast, smart, auto (small or large by difficulty)
  dashboard    {base}/dashboard   (live: queues, shedding, TTFT, backends)
  metrics      {base}/metrics     readiness: {base}/readyz
  policy       {DEMO_POLICY} (edit it: the gateway reloads on save)

Try it:
  curl -s {base}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "fast", "messages": [{{"role": "user", "content": "Hello!"}}]}}'
  echo '{{"messages": [{{"role": "user", "content": "Prove that primes never end."}}]}}' \\
    | latency-gateway route --policy {DEMO_POLICY}     (where auto sends it, and why)

  from openai import OpenAI
  client = OpenAI(base_url="{base}/v1", api_key="demo")
  reply = client.chat.completions.create(
      model="smart", messages=[{{"role": "user", "content": "Hi"}}])
  print(reply.choices[0].message.content)

Ctrl-C stops the gateway and the fleet.
"""


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def run_demo(host: str, port: int, speed: float) -> int:
    from gateway.cli import serve_policy

    if not DEMO_POLICY.exists() or not DEMO_FLEET.exists():
        print(
            f"demo files not found under {ROOT}: run the demo from a checkout (pip install -e .)",
            file=sys.stderr,
        )
        return 1
    fleet = load_fleet(DEMO_FLEET)
    argv = [
        sys.executable,
        "-m",
        "loadtests.sim",
        "--fleet",
        str(DEMO_FLEET),
        "--speed",
        str(speed),
    ]
    health = [url + "/health" for url in replica_urls(fleet)]
    log_path = Path(tempfile.gettempdir()) / "latency-gateway-demo-fleet.log"
    print(f"starting the simulated fleet (log: {log_path}) ...", flush=True)
    # uvicorn re-raises SIGTERM after its shutdown; as SystemExit it unwinds through
    # ``running`` below, which stops the fleet, instead of killing this process outright.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with running(argv, health, log_path, timeout_s=60):
        print(banner(host, port), flush=True)
        code: int = serve_policy(DEMO_POLICY, host=host, port=port, log_level="warning")
        return code
