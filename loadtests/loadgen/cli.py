"""``python -m loadtests.loadgen``: run one workload against a gateway or a fleet directly."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from loadtests.loadgen.client import Target
from loadtests.loadgen.report import markdown_summary
from loadtests.loadgen.sampler import DEFAULT_GAUGES
from loadtests.loadgen.session import (
    LoadSpec,
    build_plan,
    direct_targets,
    parse_pairs,
    perform,
)
from loadtests.loadgen.workload import load_workload


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments shared with ``loadtests.compare``."""
    parser.add_argument("--workload", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, help="override the mean arrival rate (req/s)")
    parser.add_argument("--duration", type=float, help="stop scheduling after N seconds")
    parser.add_argument("--requests", type=int, help="stop after N requests")
    parser.add_argument("--slo-ttft-ms", type=float)
    parser.add_argument("--slo-tpot-ms", type=float)
    parser.add_argument("--timeout", type=float, default=120.0, help="hard per-request cap (s)")
    parser.add_argument("--model-map", help="rename workload models: fast=small,smart=large")
    parser.add_argument("--no-plots", action="store_true")


def spec_from_args(args: argparse.Namespace) -> LoadSpec:
    return LoadSpec(
        workload=args.workload,
        seed=args.seed,
        rate=args.rate,
        duration_s=args.duration,
        max_requests=args.requests,
        slo_ttft_ms=args.slo_ttft_ms,
        slo_tpot_ms=args.slo_tpot_ms,
        request_timeout_s=args.timeout,
        model_map=parse_pairs(args.model_map),
        plots=not args.no_plots,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.loadgen", description=__doc__)
    add_load_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--base-url", default="http://127.0.0.1:8080", help="gateway mode")
    where.add_argument("--direct", help="direct mode: URL=MODEL,URL=MODEL (round-robin)")
    parser.add_argument("--out", type=Path, help="report directory")
    parser.add_argument("--metrics-url", action="append", default=[], help="repeatable")
    parser.add_argument("--metrics-gauge", action="append", help="repeatable gauge name")
    parser.add_argument("--dry-run", action="store_true", help="print the plan as JSONL")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spec = spec_from_args(args)
    if args.dry_run:
        for request in build_plan(spec, load_workload(spec.workload)):
            sys.stdout.buffer.write(orjson.dumps(request.as_dict()) + b"\n")
        return 0
    targets = direct_targets(args.direct) if args.direct else [Target(args.base_url)]
    summary, _ = perform(
        spec,
        targets,
        args.out,
        mode="direct" if args.direct else "gateway",
        metrics_urls=args.metrics_url,
        gauges=args.metrics_gauge or DEFAULT_GAUGES,
    )
    print(markdown_summary(summary, {"workload": args.workload.stem, "out": args.out}))
    return 0
