"""Command line: ``latency-gateway serve | check | demo | schema | hash-key | cache-curve``."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.access_log import ACCESS_LOGGER, write_in_background
from gateway.policy import PolicyError, load_policy_file
from gateway.policy.compile import CompiledPolicy
from gateway.policy.schema import Policy

if TYPE_CHECKING:
    from starlette.applications import Starlette


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    code: int = args.func(args)
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latency-gateway", description="Latency-aware OpenAI-compatible LLM gateway"
    )
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the gateway on a policy file")
    serve.add_argument("--policy", required=True, help="policy YAML file")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)

    check = sub.add_parser("check", help="validate and compile a policy file")
    check.add_argument("policy", help="policy YAML file")
    check.set_defaults(func=_check)

    demo = sub.add_parser("demo", help="start a simulated fleet and the gateway in front of it")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8080)
    demo.add_argument("--speed", type=float, default=1.0, help="simulated time / real time")
    demo.set_defaults(func=_demo)

    schema = sub.add_parser("schema", help="print the policy's JSON Schema")
    schema.set_defaults(func=_schema)

    hash_key = sub.add_parser(
        "hash-key", help="make a gateway API key and print it with its hash for the policy"
    )
    hash_key.add_argument(
        "--stdin", action="store_true", help="hash the key read from stdin instead of a new one"
    )
    hash_key.set_defaults(func=_hash_key)

    curve = sub.add_parser(
        "cache-curve",
        help="print the semantic-cache verifier's precision/recall curve and the threshold "
        "each max_false_hit_rate gives",
    )
    curve.add_argument("--verifier", help="weights file (default: the one shipped)")
    curve.add_argument("--points", type=int, default=20, help="rows of the curve to print")
    curve.set_defaults(func=_cache_curve)
    return parser


def _cache_curve(args: argparse.Namespace) -> int:
    from gateway.cache.curve_report import curve_report
    from gateway.cache.verifier import load_verifier

    try:
        verifier = load_verifier(args.verifier)
    except (OSError, ValueError) as exc:
        print(f"cache-curve: cannot read the verifier: {exc}", file=sys.stderr)
        return 1
    print("\n".join(curve_report(verifier, args.points)))
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    from gateway.security.keys import KeyFormatError, hash_key, new_key

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


def _check(args: argparse.Namespace) -> int:
    try:
        policy = load_policy_file(args.policy)
    except PolicyError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    pools = ", ".join(f"{p.name} ({len(p.backends)} backends)" for p in policy.pools.values())
    print(
        f"{args.policy}: ok, digest {policy.digest[:12]}; pools: {pools}; "
        f"models: {', '.join(policy.model_names())}"
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    return serve_policy(args.policy, host=args.host, port=args.port, log_level=args.log_level)


def _demo(args: argparse.Namespace) -> int:
    from loadtests.demo import run_demo

    return run_demo(args.host, args.port, args.speed)


def serve_policy(path: str | Path, *, host: str, port: int, log_level: str) -> int:
    """Load the policy (exit 1 if it is invalid) and serve it until interrupted."""
    from gateway.app import build_app

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every upstream request at INFO: far too loud for a proxy.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        policy = load_policy_file(path)
    except PolicyError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    access = write_in_background(logging.getLogger(ACCESS_LOGGER), sys.stdout)
    app = build_app(policy, policy_path=path)
    # Everything loaded so far lives as long as the process: keep it out of the collector's
    # full passes, whose pauses would otherwise land on the latency tail.
    gc.collect()
    gc.freeze()
    try:
        _run_uvicorn(app, policy, host=host, port=port, log_level=log_level)
    finally:
        access.stop()
    return 0


def _run_uvicorn(
    app: Starlette, policy: CompiledPolicy, *, host: str, port: int, log_level: str
) -> None:
    import uvicorn

    from gateway.security.slow_clients import header_timeout_protocol

    server = policy.source.server
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        # Slow clients cannot hold connections: headers within header_timeout_s (the body's
        # own timeout is checked while reading it); beyond max_connections uvicorn answers 503.
        http=header_timeout_protocol(server.header_timeout_s),
        limit_concurrency=server.max_connections,
        # On SIGTERM: stop accepting, let in-flight requests finish for this long, then cancel
        # the rest (which closes their upstream connections, so backends stop generating).
        timeout_graceful_shutdown=policy.source.server.drain_timeout_s,
    )


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(policy_json_schema(), indent=2, sort_keys=True))
    return 0


def policy_json_schema() -> dict[str, object]:
    schema = Policy.model_json_schema()
    schema["title"] = "latency-gateway policy"
    return schema
