"""Command line: ``latency-gateway serve | check | demo | route | fit-router | cache-curve |
schema | docs | hash-key``."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gateway import __version__
from gateway.access_log import ACCESS_LOGGER, write_in_background
from gateway.classify.vector_use import VectorUse
from gateway.commands.process import configure_logging, load_or_report, run_uvicorn
from gateway.policy import load_policy_file
from gateway.policy.compile import CompiledPolicy
from gateway.policy.extras import INSTALL, encoder_modules, missing, semantic_installed
from gateway.schema import Policy
from gateway.upstream.origin import url_form, way_notes

if TYPE_CHECKING:
    from gateway.embedding import Encoder


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    code: int = args.func(args)
    return code


def command_line(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` read as ``latency-gateway`` reads it (the deploy files' tests use this)."""
    return _parser().parse_args(argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latency-gateway", description="Latency-aware OpenAI-compatible LLM gateway"
    )
    parser.add_argument("--version", action="version", version=f"latency-gateway {__version__}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the gateway on a policy file")
    serve.add_argument("--policy", required=True, help="policy YAML file")
    _listen_options(serve)
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="the gateway's own log (default: %(default)s); access lines go to stdout",
    )
    serve.add_argument(
        "--workers",
        type=_positive,
        help="processes serving the port as one gateway (default: the cores available, "
        "at most 8; 1: one process)",
    )
    serve.set_defaults(func=_serve)

    check = sub.add_parser("check", help="validate and compile a policy file")
    check.add_argument("policy", help="policy YAML file")
    check.set_defaults(func=_check)

    demo = sub.add_parser("demo", help="start a simulated fleet and the gateway in front of it")
    _listen_options(demo)
    demo.add_argument("--speed", type=float, default=1.0, help="simulated time / real time")
    demo.add_argument(
        "--access-log-stdout",
        action="store_true",
        help="print one JSON access line per request here (default: to a file the banner names)",
    )
    demo.set_defaults(func=_demo)

    route = sub.add_parser(
        "route",
        help="print the pool the gateway would choose for each request read as a JSON line",
    )
    route.add_argument("--policy", required=True, help="policy YAML file")
    route.add_argument("--model", help="model for lines without one (default: the auto model)")
    route.set_defaults(func=_route)

    fit = sub.add_parser(
        "fit-router", help="fit the learned difficulty model on labelled outcomes (JSON lines)"
    )
    fit.add_argument(
        "data", help="lines of {prompt, weak_ok, strong_ok} or {prompt, weak_score, strong_score}"
    )
    fit.add_argument("--out", default="difficulty_model.json", help="weights file to write")
    fit.add_argument("--l2", type=float, help="penalty (default: chosen by cross-validation)")
    fit.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    fit.set_defaults(func=_fit_router)

    schema = sub.add_parser("schema", help="print the policy's JSON Schema")
    schema.set_defaults(func=_schema)

    docs = sub.add_parser("docs", help="write the policy reference page, generated from the schema")
    docs.add_argument("page", choices=("policy",), help="the page to write")
    docs.add_argument("--out", default="docs/operating/policy-reference.md", help="- for stdout")
    docs.set_defaults(func=_docs)

    hash_key = sub.add_parser(
        "hash-key", help="make a gateway API key and print it with its hash for the policy"
    )
    hash_key.add_argument(
        "--stdin", action="store_true", help="hash the key read from stdin instead of a new one"
    )
    hash_key.set_defaults(func=_hash_key)

    curve = sub.add_parser(
        "cache-curve",
        help="print the semantic-cache verifiers' bound-recall curves, their P-CHR AUC and "
        "the threshold each max_false_hit_rate gives",
    )
    curve.add_argument("--verifier", help="feature verifier weights (default: the one shipped)")
    curve.add_argument("--cross-encoder", help="cross-encoder weights (default: the one shipped)")
    curve.add_argument("--points", type=int, default=20, help="rows of the curve to print")
    curve.set_defaults(func=_cache_curve)
    return parser


def _listen_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s, this machine only; 0.0.0.0: all)",
    )
    command.add_argument(
        "--port", type=int, default=8080, help="port to listen on (default: %(default)s)"
    )


def _cache_curve(args: argparse.Namespace) -> int:
    from gateway.cache.judgement.verifier import load_verifier
    from gateway.commands.bound_report import cross_encoder_report
    from gateway.commands.cache_curve import curve_report

    try:
        verifier = load_verifier(args.verifier)
        cross = cross_encoder_report(args.cross_encoder, args.points)
    except (OSError, ValueError) as exc:
        print(f"cache-curve: cannot read the verifier: {exc}", file=sys.stderr)
        return 1
    features = [
        "",
        "Feature verifier (`verifier: features`):",
        *curve_report(verifier, args.points),
    ]
    print("\n".join([*cross, *features]))
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    from gateway.security.api_keys import KeyFormatError, hash_key, new_key

    key = sys.stdin.readline().strip() if args.stdin else new_key()
    try:
        hashed = hash_key(key)
    except KeyFormatError as exc:
        print(f"hash-key: {exc}", file=sys.stderr)
        return 1
    if not args.stdin:
        print(f"key:  {key}    (give this to the client; it is not stored anywhere)")
    print(f"hash: {hashed}    (put this under auth.tenants.<name>.keys or admin.keys)")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _load(path: str | Path) -> CompiledPolicy | None:
    """The compiled policy, or None once its problems are printed."""
    return load_or_report(path)


def _check(args: argparse.Namespace) -> int:
    policy = _load(args.policy)
    if policy is None:
        return 1
    pools = ", ".join(f"{p.name} ({len(p.backends)} backends)" for p in policy.pools.values())
    print(
        f"{args.policy}: ok, digest {policy.digest[:12]}; pools: {pools}; "
        f"models: {', '.join(policy.model_names())}"
    )
    discovering = {b.name: b.discover for b in policy.source.backends if b.discover is not None}
    for spec in policy.backends:
        # Says which form of the URL was understood (server root or API base).
        notes = [url_form(spec.url), *way_notes(spec.origin)]
        found = discovering.get(spec.name)
        if found is not None:
            every = f"resolved every {found.interval_s:g} s, at most {found.max_replicas}"
            notes.insert(0, f"replicas: the addresses of {found.dns} (port {found.port}), {every}")
        print(f"  backend {spec.name} {spec.url}: {'; '.join(notes)}")
    if not semantic_installed():
        print(
            "install: without the semantic extra (fine for this policy); the semantic cache, "
            f"classify.knn and classify.model.embedding would need {INSTALL}"
        )
    split = policy.auto_split
    if split is not None and any(route.auto for route in policy.models.values()):
        scored = "heuristic"
        if policy.classify.model is not None:
            embeds = policy.classify.vector_use is VectorUse.EMBED
            scored = "learned model, on the embedding" if embeds else "learned model, on words"
        print(
            f"route: auto (after any tier rule): difficulty >= {split.threshold:.3f} ({scored}) "
            f"to pool {split.large}, below to pool {split.small}"
        )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from gateway.commands.workers import default_workers

    workers = args.workers if args.workers is not None else default_workers()
    return serve_policy(
        args.policy, host=args.host, port=args.port, log_level=args.log_level, workers=workers
    )


def _demo(args: argparse.Namespace) -> int:
    from gateway.commands import demo

    with demo.workdir() as workdir:
        policy_path = demo.demo_policy(workdir)
        policy = load_policy_file(policy_path)
        urls = [backend.url for backend in policy.backends]
        taken = demo.taken_ports(urls)
        if taken:
            ports = ", ".join(map(str, taken))
            print(
                f"demo: port {ports} of the simulated fleet is in use (another demo running?); "
                "stop it first",
                file=sys.stderr,
            )
            return 1
        health = [url.rstrip("/") + "/health" for url in urls]
        log_path = workdir / "fleet.log"
        access = None if args.access_log_stdout else workdir / "access.log"
        print(f"starting the simulated fleet (log: {log_path}) ...", flush=True)
        try:
            with (
                demo.simulated_fleet(health, args.speed, log_path),
                contextlib.ExitStack() as files,
            ):
                print(demo.banner(args.host, args.port, policy_path, policy, access), flush=True)
                lines = sys.stdout if access is None else files.enter_context(access.open("a"))
                code = serve_policy(
                    policy_path,
                    host=args.host,
                    port=args.port,
                    log_level="warning",
                    access_log=lines,
                )
        except demo.FleetError as exc:
            print(f"demo: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # Ctrl-C before the gateway served (the fleet starting)
            code = 130
        if code == 130:  # Ctrl-C
            print("demo stopped", flush=True)
        return code


def serve_policy(
    path: str | Path,
    *,
    host: str,
    port: int,
    log_level: str,
    access_log: IO[str] | None = None,
    workers: int = 1,
) -> int:
    """Load the policy (exit 1 if it is invalid) and serve it until interrupted: in this
    process, or with ``workers`` > 1 in that many worker processes (``workers.py``); access
    lines go to ``access_log`` (default: standard output; each worker's to its own)."""
    from gateway.app import build_app

    configure_logging(log_level)
    policy = _load(path)
    if policy is None:
        return 1
    if workers > 1:
        from gateway.commands.workers import serve_workers

        drain_s = policy.source.server.drain_timeout_s
        return serve_workers(
            str(path), host=host, port=port, log_level=log_level, workers=workers, drain_s=drain_s
        )
    lines = sys.stdout if access_log is None else access_log
    access = write_in_background(logging.getLogger(ACCESS_LOGGER), lines)
    app = build_app(policy, policy_path=path)
    # Everything loaded so far lives as long as the process: keep it out of the collector's
    # full passes, whose pauses would otherwise land on the latency tail.
    gc.collect()
    gc.freeze()
    try:
        run_uvicorn(app, policy, host=host, port=port, log_level=log_level)
    except KeyboardInterrupt:  # Ctrl-C, re-raised by uvicorn once it has shut down
        return 130
    finally:
        access.stop()
    return 0


def _route(args: argparse.Namespace) -> int:
    from gateway.commands.route_report import DryRun, needs_encoder

    policy = _load(args.policy)
    if policy is None:
        return 1
    encoder = _encoder(policy.source.cache.semantic.model_path) if needs_encoder(policy) else None
    try:
        dry = DryRun(policy, args.model, encoder)
    except (OSError, ValueError, KeyError) as exc:
        print(f"route: classify.knn exemplars not usable: {exc}", file=sys.stderr)
        return 1
    for decision in dry.lines(sys.stdin):
        print(json.dumps(decision), flush=True)
    return 0


def _fit_router(args: argparse.Namespace) -> int:
    from gateway.classify.fitting.router_fit import (
        L2_CANDIDATES,
        choose_l2,
        embed_all,
        fit_model,
        read_outcomes,
    )

    try:
        rows = read_outcomes(args.data)
    except (OSError, ValueError) as exc:
        print(f"fit-router: {exc}", file=sys.stderr)
        return 1
    encoder = _encoder(None)
    vectors = embed_all(encoder, [r.prompt for r in rows])
    l2 = args.l2
    try:
        if l2 is None:
            l2, means = choose_l2(rows, vectors, L2_CANDIDATES, folds=args.folds)
            tried = ", ".join(f"l2 {k:g}: {v:.3f}" for k, v in means.items())
            print(f"cross-validated APGR ({args.folds} folds): {tried}", file=sys.stderr)
        fitted = fit_model(rows, vectors, l2=l2, about=f"fit-router on {args.data} (l2 {l2:g})")
    except ValueError as exc:
        print(f"fit-router: {exc}", file=sys.stderr)
        return 1
    Path(args.out).write_text(json.dumps(fitted.model.to_json(), indent=1) + "\n")
    print(f"{args.out}: {len(rows)} prompts, l2 {l2:g}; set classify.model.weights to it")
    return 0


def _encoder(model_path: str | None) -> Encoder:
    from gateway.embedding import SentenceEncoder

    lacking = missing(encoder_modules(model_path))
    if lacking:
        raise SystemExit(
            f"this command embeds prompts: it needs the semantic extra (missing "
            f"{', '.join(lacking)}): {INSTALL}"
        )
    print("loading the embedding model...", file=sys.stderr)
    return SentenceEncoder(model_path)


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(policy_json_schema(), indent=2, sort_keys=True))
    return 0


def _docs(args: argparse.Namespace) -> int:
    from gateway.commands.policy_reference import write

    return write(args.out)


def policy_json_schema() -> dict[str, object]:
    schema = Policy.model_json_schema()
    schema["title"] = "latency-gateway policy"
    return schema
