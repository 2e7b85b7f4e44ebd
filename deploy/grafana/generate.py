"""Writes the Grafana dashboards of this folder: ``python deploy/grafana/generate.py``.

The JSON files are generated so that panels stay uniform and every query lives in one place;
a test checks they are up to date and that every metric they query exists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _panel(title: str, exprs: list[tuple[str, str]], unit: str, x: int, y: int) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(65 + i), "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(exprs)
        ],
    }


def _dashboard(
    uid: str, title: str, panels: list[tuple[str, list[tuple[str, str]], str]]
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["latency-gateway"],
        "timezone": "browser",
        "schemaVersion": 39,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "label": "Prometheus",
                }
            ]
        },
        "panels": [
            _panel(name, exprs, unit, 12 * (i % 2), 8 * (i // 2))
            for i, (name, exprs, unit) in enumerate(panels)
        ],
    }


def _quantiles(metric: str, by: str) -> list[tuple[str, str]]:
    """p50, p95 and p99 of a histogram, one series per value of the label ``by``."""
    return [
        (
            f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket[5m])))",
            f"p{round(q * 100)} {{{{{by}}}}}",
        )
        for q in (0.5, 0.95, 0.99)
    ]


def _q99(metric: str, by: str) -> str:
    labels = f"{by}, le" if by else "le"
    return f"histogram_quantile(0.99, sum by ({labels}) (rate({metric}_bucket[5m])))"


def dashboards() -> dict[str, dict[str, Any]]:
    ttft = "gateway_time_to_first_token_seconds"
    tpot = "gateway_time_per_output_token_seconds"
    return {
        "load-shedding.json": _dashboard(
            "lg-shedding",
            "latency-gateway · load shedding",
            [
                (
                    "Queue depth by pool and lane",
                    [("sum by (pool, lane) (gateway_queue_depth)", "{{pool}} {{lane}}")],
                    "short",
                ),
                (
                    "Admitted and shed per second",
                    [
                        ("sum by (pool) (rate(gateway_admitted_total[1m]))", "admitted {{pool}}"),
                        (
                            "sum by (pool, reason) (rate(gateway_shed_total[1m]))",
                            "shed {{pool}} {{reason}}",
                        ),
                    ],
                    "reqps",
                ),
                (
                    "Overload ladder step",
                    [("max by (pool) (gateway_overload_step)", "{{pool}}")],
                    "short",
                ),
                (
                    "Estimated wait (what Retry-After is built from)",
                    [("max by (pool) (gateway_estimated_wait_seconds)", "{{pool}}")],
                    "s",
                ),
                (
                    "Concurrency limit",
                    [("max by (pool) (gateway_concurrency_limit)", "{{pool}}")],
                    "short",
                ),
                ("Queue wait", _quantiles("gateway_queue_wait_seconds", "pool"), "s"),
            ],
        ),
        "latency.json": _dashboard(
            "lg-latency",
            "latency-gateway · latency",
            [
                ("TTFT by pool", _quantiles(ttft, "pool"), "s"),
                (
                    "TTFT p99 by pool and length class",
                    [
                        (
                            _q99(ttft, "pool, length"),
                            "{{pool}} {{length}}",
                        )
                    ],
                    "s",
                ),
                ("Time per output token by pool", _quantiles(tpot, "pool"), "s"),
                (
                    "TPOT p99 by pool and length class",
                    [
                        (
                            _q99(tpot, "pool, length"),
                            "{{pool}} {{length}}",
                        )
                    ],
                    "s",
                ),
                (
                    "Gateway overhead",
                    [
                        (
                            _q99("gateway_overhead_seconds", ""),
                            "p99",
                        )
                    ],
                    "s",
                ),
                (
                    "Requests by status",
                    [("sum by (status) (rate(gateway_requests_total[1m]))", "{{status}}")],
                    "reqps",
                ),
                (
                    "Requests by tenant and status (refusals included)",
                    [
                        (
                            "sum by (tenant, status) (rate(gateway_tenant_requests_total[1m]))",
                            "{{tenant}} {{status}}",
                        )
                    ],
                    "reqps",
                ),
                (
                    "Tokens by tenant",
                    [
                        (
                            "sum by (tenant, kind) (rate(gateway_tenant_tokens_total[1m]))",
                            "{{tenant}} {{kind}}",
                        )
                    ],
                    "short",
                ),
            ],
        ),
        "caches.json": _dashboard(
            "lg-caches",
            "latency-gateway · caches",
            [
                (
                    "Gateway cache results",
                    [
                        ("sum by (result) (rate(gateway_cache_lookups_total[5m]))", "{{result}}"),
                    ],
                    "reqps",
                ),
                (
                    "Gateway cache hit rate",
                    [
                        (
                            'sum(rate(gateway_cache_lookups_total{result=~"exact|semantic"}[5m]))'
                            ' / sum(rate(gateway_cache_lookups_total{result!="bypass"}[5m]))',
                            "hit rate",
                        )
                    ],
                    "percentunit",
                ),
                (
                    "Backend prefix-cache hit rate",
                    [
                        ("avg by (backend) (gateway_backend_prefix_cache_hit_rate)", "{{backend}}"),
                    ],
                    "percentunit",
                ),
                (
                    "Prefix held by the chosen replica (routing)",
                    [
                        (
                            "histogram_quantile(0.5, sum by (pool, le) "
                            "(rate(gateway_route_prefix_match_ratio_bucket[5m])))",
                            "p50 {{pool}}",
                        )
                    ],
                    "percentunit",
                ),
                (
                    "Context compressions by method",
                    [
                        (
                            "sum by (pool, method) (rate(gateway_compressions_total[5m]))",
                            "{{pool}} {{method}}",
                        ),
                        (
                            "sum by (pool) (rate(gateway_compression_saved_tokens_total[5m]))",
                            "tokens saved/s {{pool}}",
                        ),
                    ],
                    "short",
                ),
                (
                    "Prefix breaks by cause",
                    [("sum by (cause) (rate(gateway_prefix_break_total[5m]))", "{{cause}}")],
                    "reqps",
                ),
            ],
        ),
        "backends.json": _dashboard(
            "lg-backends",
            "latency-gateway · backends",
            [
                (
                    "Engine queue (scraped)",
                    [("max by (backend) (gateway_backend_waiting)", "{{backend}}")],
                    "short",
                ),
                (
                    "Running in engine (scraped)",
                    [("max by (backend) (gateway_backend_running)", "{{backend}}")],
                    "short",
                ),
                (
                    "KV cache usage (scraped)",
                    [("max by (backend) (gateway_backend_kv_cache_usage)", "{{backend}}")],
                    "percentunit",
                ),
                (
                    "Speculative decoding acceptance",
                    [("avg by (backend) (gateway_backend_spec_decode_acceptance)", "{{backend}}")],
                    "percentunit",
                ),
                (
                    "Health and breaker",
                    [
                        ("min by (backend) (gateway_backend_healthy)", "healthy {{backend}}"),
                        ("max by (backend) (gateway_backend_breaker_state)", "breaker {{backend}}"),
                    ],
                    "short",
                ),
                (
                    "Retries and upstream errors",
                    [
                        (
                            "sum by (pool, reason) (rate(gateway_retries_total[1m]))",
                            "retry {{pool}} {{reason}}",
                        ),
                        (
                            "sum by (backend, kind) (rate(gateway_upstream_errors_total[1m]))",
                            "error {{backend}} {{kind}}",
                        ),
                    ],
                    "reqps",
                ),
                (
                    "In flight per backend (gateway)",
                    [("max by (backend) (gateway_backend_inflight)", "{{backend}}")],
                    "short",
                ),
                (
                    "Cancellations by phase",
                    [("sum by (phase) (rate(gateway_cancellations_total[1m]))", "{{phase}}")],
                    "reqps",
                ),
            ],
        ),
    }


def render(dashboard: dict[str, Any]) -> str:
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


def main() -> int:
    for name, dashboard in dashboards().items():
        (HERE / name).write_text(render(dashboard))
    return 0


if __name__ == "__main__":
    sys.exit(main())
