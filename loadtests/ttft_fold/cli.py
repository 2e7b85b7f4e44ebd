"""``python -m loadtests.ttft_fold``: what the TTFT model costs a request, per checkout, at
several request rates: each checkout's ``gateway/backends/ttft.py`` is loaded from its file
(``--checkout``, repeatable; the first is the baseline of the ratios), and a request is what
the gateway asks of the model for one request to one replica: ``--predicts`` predictions
(admission's ``upper``, dispatch's and the lease's ``predict``), ``supported`` and one
``observe``, the model's clock (where it takes one) advancing ``FOLD_S / rate`` per request,
``rate`` being how many requests come within one ``FOLD_S`` (``--rates``; 1: one request per
25 ms, 40 requests/s; 10: 400 requests/s).

Two figures. Time (``timeit``): the checkouts run in turn within each of ``--rounds`` rounds
(interleaved, so the machine's load moves them alike); the best round of each is printed,
and its ratio to the baseline's; on a shared machine read the ratios, not the microseconds.
Instructions (``--instructions``): the same requests under ``valgrind --tool=callgrind``,
a run of ``--requests`` requests minus a run of none (the imports and the setup), divided by
``--requests``: a count the machine's load does not move.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import operator
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

FOLD_S = 0.025  # the clock's step is FOLD_S / rate where a checkout has no FOLD_S


def load(checkout: Path, name: str) -> ModuleType:
    """``checkout``'s ``gateway/backends/ttft.py`` as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, checkout / "gateway/backends/ttft.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no ttft.py under {checkout}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def requests(module: ModuleType, rate: float, predicts: int) -> Callable[[int], None]:
    """A function running ``n`` requests against a fresh model of ``module``."""
    # A clock as cheap to call as the gateway's (``time.perf_counter``, a C function).
    now = [1000.0]
    clock = functools.partial(operator.getitem, now, 0)
    try:
        model: Any = module.TtftModel(clock=clock)
    except TypeError:  # a model without a clock
        model = module.TtftModel()
    step = getattr(module, "FOLD_S", FOLD_S) / rate
    features = [
        module.TtftFeatures(200.0 + 37.0 * i, 1000.0 * (i % 4), i % 4, 6.0 - i % 4)
        for i in range(16)
    ]

    def run(n: int) -> None:
        for i in range(n):
            f = features[i % 16]
            predicted = model.predict(f)
            for _ in range(predicts - 1):
                model.upper(f)
            model.supported(f)
            model.observe(f, 0.05 + 0.01 * (i % 7), predicted)
            now[0] += step

    run(200)  # past the prior: the cost of a model in use
    return run


def timed(args: argparse.Namespace) -> None:
    modules = [load(c, f"ttft_{i}") for i, c in enumerate(args.checkout)]
    print(f"time per request, best of {args.rounds} interleaved rounds of {args.requests}:")
    for rate in args.rates:
        best = [float("inf")] * len(modules)
        for _ in range(args.rounds):
            for i, module in enumerate(modules):
                run = requests(module, rate, args.predicts)
                seconds = timeit.timeit(functools.partial(run, args.requests), number=1)
                best[i] = min(best[i], seconds / args.requests)
        cells = ", ".join(
            f"{c}: {b * 1e6:.1f} us ({b / best[0]:.2f}x)"
            for c, b in zip(args.checkout, best, strict=True)
        )
        print(f"  {rate:g} requests per FOLD_S: {cells}", flush=True)


def _callgrind(checkout: Path, rate: float, n: int, args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="ttft-fold-") as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                "-m", "loadtests.ttft_fold", "--run-one", str(checkout), str(rate), str(n),
                "--predicts", str(args.predicts)]  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)
        for line in out.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise ValueError("no summary in the callgrind output")


def counted(args: argparse.Namespace) -> None:
    print(f"instructions per request (callgrind, {args.requests} requests minus none):")
    base = {c: _callgrind(c, 1.0, 0, args) for c in args.checkout}
    for rate in args.rates:
        per = [(_callgrind(c, rate, args.requests, args) - base[c]) / args.requests
               for c in args.checkout]  # fmt: skip
        cells = ", ".join(
            f"{c}: {p:,.0f} ({p / per[0]:.2f}x)" for c, p in zip(args.checkout, per, strict=True)
        )
        print(f"  {rate:g} requests per FOLD_S: {cells}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.ttft_fold",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--checkout", action="append", type=Path, help="default: this one")
    parser.add_argument("--rates", type=lambda s: [float(r) for r in s.split(",")],
                        default=[1.0, 2.0, 5.0, 10.0, 20.0])  # fmt: skip
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--predicts", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="also count, by callgrind")
    parser.add_argument("--run-one", nargs=3, metavar=("CHECKOUT", "RATE", "N"),
                        help="(internal) run N requests once, for callgrind")  # fmt: skip
    args = parser.parse_args(argv)
    if args.run_one:
        checkout, rate, n = args.run_one
        requests(load(Path(checkout), "ttft_one"), float(rate), args.predicts)(int(n))
        return 0
    args.checkout = args.checkout or [Path.cwd()]
    timed(args)
    if args.instructions:
        counted(args)
    return 0
