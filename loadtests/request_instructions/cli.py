"""``python -m loadtests.request_instructions``: the gateway's user-space CPU instructions per
request, counted by callgrind: evidence for a per-request cut that the machine's load does not
move (requests/s and CPU time do, on a shared machine; an instruction count does not).

Each checkout (``--checkout``, repeatable; default this one) serves the overhead benchmark's
policy (``loadtests.overhead.measure.gateway_policy``: one fake upstream) as ``python -P -m
gateway serve`` under ``valgrind --tool=callgrind --instr-atstart=no``, with that checkout on
``PYTHONPATH`` (``-P``: not the package of the working directory). After ``--warmup``
requests, counting is switched on (``callgrind_control -i on``) for ``--requests`` requests
from ``--concurrency`` closed-loop clients, each the overhead benchmark's capacity request (a
20-token stream the fake answers at once), then dumped; the instructions counted over the
requests is the figure. The gateway's background tasks (health probes, load reads, the
collector's passes) run meanwhile and are counted too: repeated runs of the same code differ
by up to about 1.5%. Kernel work (system calls) is not counted. Checkouts run in turn,
``--repeat`` times; the last line gives each one's mean. Parameters: ``--port`` (the fake's;
the gateway takes the next one).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from gateway.children import running
from gateway.upstream import ConnectionPool, Origin
from loadtests.kit.processes import fake_argv
from loadtests.overhead.measure import PathStats, flat_payload, gateway_policy, timed_stream

_HEADERS = [("content-type", "application/json")]


async def _requests(url: str, count: int, concurrency: int) -> PathStats:
    """``count`` capacity requests to ``url`` from ``concurrency`` clients."""
    stats, left = PathStats(), [count]
    pool = ConnectionPool(max_idle_per_origin=concurrency + 8)
    origin = Origin.from_url(url)

    async def client() -> None:
        while left[0] > 0:
            left[0] -= 1
            await timed_stream(pool, origin, stats, flat_payload(), _HEADERS)

    try:
        await asyncio.gather(*(client() for _ in range(concurrency)))
    finally:
        pool.close()
    return stats


def _control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


def _counted(dump: Path) -> int:
    """The instructions of a callgrind dump (its ``summary:`` line)."""
    for line in dump.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"no summary in {dump}")


def instructions_per_request(checkout: Path, args: argparse.Namespace, folder: Path) -> float:
    """One run: ``checkout``'s gateway under callgrind, its instructions per request."""
    fake_url = f"http://127.0.0.1:{args.port}"
    gateway_url = f"http://127.0.0.1:{args.port + 1}"
    policy = folder / "policy.yaml"
    policy.write_text(gateway_policy(fake_url), encoding="utf-8")
    out = folder / "callgrind.out"
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
            sys.executable, "-P", "-m", "gateway", "serve", "--policy", str(policy),
            "--host", "127.0.0.1", "--port", str(args.port + 1), "--workers", "1"]  # fmt: skip
    env = {"PYTHONPATH": str(checkout.resolve())}
    fake = fake_argv(args.port, 20.0, 20, 5.0)
    with (
        running(fake, [fake_url + "/health"], folder / "fake.log"),
        running(
            argv,
            [gateway_url + "/readyz"],
            folder / "gateway.log",
            timeout_s=300,
            env=env,
            grace_s=30,
        ) as proc,  # fmt: skip
    ):
        asyncio.run(_requests(gateway_url, args.warmup, args.concurrency))
        _control("-i", "on", str(proc.pid))
        stats = asyncio.run(_requests(gateway_url, args.requests, args.concurrency))
        _control("--dump", str(proc.pid))
        _control("-i", "off", str(proc.pid))
    if stats.errors:
        raise RuntimeError(f"{stats.errors} requests failed")
    dumps = sorted(folder.glob("callgrind.out.*"))  # the --dump's (the exit's is the bare one)
    return _counted(dumps[-1]) / int(args.requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.request_instructions",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--checkout", action="append", type=Path, help="default: this one")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--port", type=int, default=9700)
    args = parser.parse_args(argv)
    checkouts: list[Path] = args.checkout or [Path.cwd()]
    figures: dict[Path, list[float]] = {c: [] for c in checkouts}
    for _ in range(args.repeat):
        for checkout in checkouts:
            with tempfile.TemporaryDirectory(prefix="instructions-") as tmp:
                per = instructions_per_request(checkout, args, Path(tmp))
            figures[checkout].append(per)
            print(f"{checkout}: {per:,.0f} instructions per request", flush=True)
    means = ", ".join(f"{c}: {sum(v) / len(v):,.0f}" for c, v in figures.items())
    print(f"mean of {args.repeat}: {means}")
    return 0
