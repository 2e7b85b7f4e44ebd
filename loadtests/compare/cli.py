"""``python -m loadtests.compare``: one workload, same seed, direct round-robin vs gateway.

The two runs (``runs.py``: each on a freshly started fleet, direct first) and their ratio
table, written with the runs' reports under ``--out`` (default ``results/out/`` here,
git-ignored). Parameters: the load generator's (``--workload``, ``--rate``, ...), ``--fleet``,
``--policy`` (default: derived from the fleet), ``--direct-groups``, ``--gateway-port``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from loadtests.compare.runs import direct_run, gateway_run
from loadtests.loadgen.cli import add_load_arguments, spec_from_args
from loadtests.loadgen.comparison import ratio_rows, ratio_table, write_comparison
from loadtests.loadgen.fleet import policy_for, write_policy
from loadtests.loadgen.plots import plot_ttft_cdf
from loadtests.sim.fleet import load_fleet

OUT = Path(__file__).resolve().parent / "results" / "out"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.compare", description=__doc__)
    add_load_arguments(parser)
    parser.add_argument("--fleet", required=True, type=Path, help="simulator fleet YAML")
    parser.add_argument("--policy", type=Path, help="gateway policy (default: derived)")
    parser.add_argument("--gateway-port", type=int, default=8080)
    parser.add_argument("--direct-groups", help="comma-separated fleet groups for direct mode")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--startup-timeout", type=float, default=60.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spec = spec_from_args(args)
    fleet = load_fleet(args.fleet)
    policy: Path = args.policy or args.out / "policy.yaml"
    if args.policy is None:
        write_policy(policy, policy_for(fleet))
    groups = set(args.direct_groups.split(",")) if args.direct_groups else None
    direct, direct_result = direct_run(spec, fleet, args.fleet, groups, args)
    gateway, gateway_result = gateway_run(spec, fleet, args.fleet, policy, args)
    rows = ratio_rows(direct, gateway)
    meta = {
        "workload": args.workload.stem,
        "fleet": str(args.fleet),
        "policy": str(policy),
        "seed": spec.seed,
        "rate": spec.rate,
        "order": "direct then gateway, fresh fleet each",
    }
    write_comparison(args.out, rows, meta, {"direct": direct, "gateway": gateway})
    runs = {"direct": direct_result.records, "gateway": gateway_result.records}
    if spec.plots:
        plot_ttft_cdf(runs, args.out / "ttft_cdf.png")
    print(ratio_table(rows))
    print(f"\nreports in {args.out}")
    return 0
