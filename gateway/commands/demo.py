"""``latency-gateway demo``: a simulated fleet in its own process, and the gateway in front.

The fleet is the simulator of the load tests, started as a child process (``python -m
loadtests.sim --fleet demo``, 2 small and 2 large vLLM replicas on the ports the demo policy
names); the product never imports it. The demo policy is package data
(``gateway/defaults/demo.yaml``), copied to a fresh temporary directory so that it can be
edited while the gateway runs (it reloads on save), whether the gateway runs from a checkout
or a wheel; the fleet's log and the gateway's access log (one JSON line a request, not on
the terminal unless asked) are written there, and the directory is removed when the demo
stops. The fleet stops with the gateway, on Ctrl-C as on SIGTERM, within about two seconds
when idle (each step of the fleet's stop is bounded by ``FLEET_GRACE_S``), without a
traceback (Ctrl-C exits 130, SIGTERM 143). A port the fleet needs
that something else holds (another demo) stops the demo before it starts, rather than
letting another fleet answer. The banner shows how the ``auto`` model routes: its tier
rules, then the difficulty split, what scores it and what that score is fitted on.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from importlib.resources import files
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from gateway.children import StartupError, running
from gateway.policy.compile import CompiledPolicy

FLEET_ARGV = (sys.executable, "-m", "loadtests.sim", "--fleet", "demo")
START_TIMEOUT_S = 60.0
# How long the idle fleet gets for each step of its stop (SIGINT, then SIGTERM, then SIGKILL):
# it stops at once on SIGINT, so this only bounds a fleet that hangs, and keeps the demo's
# whole stop within about two seconds of Ctrl-C even then.
FLEET_GRACE_S = 0.75


class FleetError(RuntimeError):
    """The simulated fleet did not come up; the message says why and where its log is."""


def demo_policy(directory: Path) -> Path:
    """A copy of the packaged demo policy in ``directory``, for the user to edit."""
    text = files("gateway").joinpath("defaults/demo.yaml").read_text(encoding="utf-8")
    path = directory / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    """A fresh directory for the demo's files, removed with them on the way out."""
    with tempfile.TemporaryDirectory(prefix="latency-gateway-demo-") as path:
        yield Path(path)


def taken_ports(urls: Sequence[str]) -> list[int]:
    """The ports of ``urls`` (the fleet's, on this machine) that something already holds."""
    taken = []
    for url in urls:
        parts = urlsplit(url)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((parts.hostname or "127.0.0.1", parts.port or 80))
            except OSError:
                taken.append(parts.port or 80)
    return taken


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log, to show before its directory goes."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def simulated_fleet(
    health_urls: Sequence[str], speed: float, log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Start the fleet, wait until every replica answers, yield it; stop it on the way out,
    whatever ends the block (SIGTERM included: it is turned into ``SystemExit`` meanwhile)."""
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    argv = [*FLEET_ARGV, "--speed", str(speed)]
    try:
        with running(
            argv, health_urls, log_path, timeout_s=START_TIMEOUT_S, grace_s=FLEET_GRACE_S
        ) as proc:
            yield proc
    except StartupError as exc:
        tail = log_tail(log_path)
        raise FleetError(
            f"the simulated fleet did not start ({exc}); its log ends:\n{tail}"
        ) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # uvicorn re-raises SIGTERM after its graceful shutdown; as SystemExit it unwinds through
    # ``simulated_fleet``, which stops the fleet, instead of ending this process outright.
    raise SystemExit(128 + signum)


def auto_routing(policy: CompiledPolicy) -> str:
    """How ``route: auto`` requests go: the tier rules, one a line, then the difficulty split
    (or the default pool)."""
    lines = []
    for rule in policy.source.routing.rules:
        when = ", ".join(f"{k} {v}" for k, v in rule.when.model_dump(exclude_none=True).items())
        lines.append(f"rule {rule.name}: {when} -> {rule.pool}")
    split = policy.auto_split
    if split is None:
        lines.append(f"otherwise -> {policy.default_pool}")
    else:
        lines.append(f"difficulty >= {split.threshold:.2f} -> {split.large}, else -> {split.small}")
        lines += scored_by(policy)
    return "\n".join(f"               {line}" for line in lines)


def scored_by(policy: CompiledPolicy) -> list[str]:
    """What the difficulty score is and what its split is fitted on, for the banner."""
    settings = policy.source.classify.model
    if policy.classify.model is None:
        return ["scored by the cue-word heuristic (classify.model.enabled: false)"]
    reads = "its embedding part" if settings.embedding else "words, word pairs, ten cues"
    if settings.weights is not None:
        return [f"scored by the learned difficulty model in {settings.weights} ({reads})"]
    share = policy.source.routing.auto.large_share
    return [
        f"scored by the learned difficulty model ({reads})",
        "fitted on RouteLLM's MMLU and GSM8K outcomes (their training halves: where",
        f"GPT-4 beats Mixtral-8x7B); the split sends the top {share:.0%} of those prompts large",
    ]


def banner(
    host: str, port: int, policy_path: Path, policy: CompiledPolicy, access_log: Path | None
) -> str:
    base = f"http://{host}:{port}"
    requests = (
        f"{access_log} (tail -f it; --access-log-stdout prints it here)"
        if access_log is not None
        else "printed below, one JSON line a request"
    )
    routing = auto_routing(policy)
    # A word problem with a twist: where GPT-4 gains most over Mixtral on the outcomes the
    # default model is fitted on (it scores 0.78 with the demo policy; the split is 0.70).
    hard = (
        "Tom has twice as many marbles as Jerry. Together they have 45 marbles, and Tom gives "
        "Jerry 5. How many marbles does each have now?"
    )
    return f"""
latency-gateway demo is up: simulated vLLM fleet (2 x Qwen2.5-1.5B, 2 x Llama-3.1-70B)
  OpenAI API   {base}/v1          models: fast, smart, auto
               chat, completions, embeddings, responses, models; vLLM's /tokenize,
               /detokenize, /v1/rerank, /v1/score
  auto         the gateway scores each prompt's difficulty and picks the pool:
{routing}
  dashboard    {base}/dashboard   (live: queues, shedding, TTFT, backends)
  metrics      {base}/metrics     readiness: {base}/readyz
  policy       {policy_path} (edit it: the gateway reloads on save)
  access log   {requests}
               (a temporary folder, removed when the demo stops)
  probes       {base}/health  {base}/version  (as vLLM's; /healthz, /readyz)

Try it:
  curl -s {base}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "fast", "messages": [{{"role": "user", "content": "Hello!"}}]}}'

  curl -si {base}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "auto", "messages": [{{"role": "user", "content": "{hard}"}}]}}' \\
    | grep x-gateway-route-reason

  from openai import OpenAI
  client = OpenAI(base_url="{base}/v1", api_key="demo")
  reply = client.chat.completions.create(
      model="smart", messages=[{{"role": "user", "content": "Hi"}}])
  print(reply.choices[0].message.content)

  The simulated engines answer like real ones: tools= gets tool calls, response_format
  JSON (or a JSON schema's value), client.responses.stream(...) ends "completed".

Ctrl-C stops the gateway and the fleet.
"""
