"""Writes the Grafana dashboards of this folder: ``python deploy/grafana/generate.py``.

The JSON files are generated so that panels stay uniform and every query lives in one place;
a test checks they are up to date, that every query parses as PromQL and that every metric
they query exists.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
POOLS = '{pool=~"$pool"}'  # the pools picked in the load-shedding dashboard's variable
TTFT = "gateway_time_to_first_token_seconds"
TPOT = "gateway_time_per_output_token_seconds"

Series = tuple[str, str]  # (PromQL expression, legend)
Panel = tuple[str, list[Series], str]  # (title, series, unit)


def _panel(title: str, exprs: list[Series], unit: str, x: int, y: int) -> dict[str, Any]:
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
    uid: str, title: str, panels: list[Panel], variables: tuple[dict[str, Any], ...] = ()
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
                },
                *variables,
            ]
        },
        "panels": [
            _panel(name, exprs, unit, 12 * (i % 2), 8 * (i // 2))
            for i, (name, exprs, unit) in enumerate(panels)
        ],
    }


def _pool_variable(metric: str) -> dict[str, Any]:
    """A ``pool`` variable (several or all; "All" also matches pools that appear later)."""
    return {
        "name": "pool",
        "type": "query",
        "label": "Pool",
        "datasource": DATASOURCE,
        "query": {"query": f"label_values({metric}, pool)", "refId": "pools"},
        "definition": f"label_values({metric}, pool)",
        "refresh": 2,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
    }


def _legend(by: str) -> str:
    return " ".join(f"{{{{{name.strip()}}}}}" for name in by.split(","))


def _agg(agg: str, by: str, inner: str, prefix: str = "") -> Series:
    """``agg by (by) (inner)``, its legend naming each label of ``by``."""
    return f"{agg} by ({by}) ({inner})", prefix + _legend(by)


def _quantiles(
    metric: str,
    by: str,
    qs: tuple[float, ...] = (0.5, 0.95, 0.99),
    *,
    label: str = "",
    window: str = "5m",
    pools: str = "",
) -> list[Series]:
    """Quantiles of a histogram, one series per value of the labels ``by`` (``pools``: a
    selector such as POOLS)."""
    return [
        (
            f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket{pools}[{window}])))",
            f"{label}p{round(q * 100)} {_legend(by)}",
        )
        for q in qs
    ]


def _q99(metric: str, by: str) -> str:
    labels = f"{by}, le" if by else "le"
    return f"histogram_quantile(0.99, sum by ({labels}) (rate({metric}_bucket[5m])))"


def _load_shedding() -> list[Panel]:
    """Per pool: the TTFT objective against predicted and observed TTFT, refusals by reason
    and priority, the queue and the Retry-After advised (over the last minute); then the
    hard limits' figures."""
    recent = partial(_quantiles, window="1m", pools=POOLS)
    retry = "gateway_retry_after_seconds"
    mean_retry = (
        f"sum by (pool) (rate({retry}_sum{POOLS}[1m]))"
        f" / sum by (pool) (rate({retry}_count{POOLS}[1m]))"
    )
    return [
        (
            "TTFT objective against predicted and observed TTFT",
            [
                _agg("max", "pool", f"gateway_ttft_objective_seconds{POOLS}", "objective "),
                *recent("gateway_ttft_predicted_seconds", "pool", (0.5, 0.99), label="predicted "),
                *recent(TTFT, "pool", (0.5, 0.99), label="observed "),
            ],
            "s",
        ),
        (
            "Pool state (0 nominal, 1 saturated, 2 overloaded)",
            [
                (
                    'max by (pool) (gateway_pool_state{pool=~"$pool",state="saturated"}'
                    ' + 2 * gateway_pool_state{pool=~"$pool",state="overloaded"})',
                    "{{pool}}",
                )
            ],
            "short",
        ),
        (
            "Refused per second by cause (deadline, saturated, hard cap) and priority",
            [_agg("sum", "pool, cause, priority", f"rate(gateway_shed_total{POOLS}[1m])")],
            "reqps",
        ),
        (
            "Refused per second by reason",
            [_agg("sum", "pool, reason", f"rate(gateway_shed_total{POOLS}[1m])")],
            "reqps",
        ),
        (
            "Queue depth by pool and priority",
            [_agg("sum", "pool, priority", f"gateway_queue_depth{POOLS}")],
            "short",
        ),
        (
            "Retry-After advised with refusals",
            [(mean_retry, "mean {{pool}}"), *recent(retry, "pool", (0.99,), label="advised ")],
            "s",
        ),
        (
            "TTFT prediction error |observed - predicted|",
            _quantiles(
                "gateway_ttft_prediction_error_seconds",
                "pool, direction",
                (0.5, 0.9),
                label="|error| ",
                pools=POOLS,
            ),
            "s",
        ),
        (
            "Admitted and shed per second",
            [
                _agg("sum", "pool", f"rate(gateway_admitted_total{POOLS}[1m])", "admitted "),
                _agg("sum", "pool", f"rate(gateway_shed_total{POOLS}[1m])", "shed "),
            ],
            "reqps",
        ),
        (
            "Queue depth by pool and lane",
            [_agg("sum", "pool, lane", f"gateway_queue_depth{POOLS}")],
            "short",
        ),
        ("Overload ladder step", [_agg("max", "pool", f"gateway_overload_step{POOLS}")], "short"),
        (
            "Estimated wait of a standard short request",
            [_agg("max", "pool", f"gateway_estimated_wait_seconds{POOLS}")],
            "s",
        ),
        ("Concurrency limit", [_agg("max", "pool", f"gateway_concurrency_limit{POOLS}")], "short"),
        ("Queue wait", _quantiles("gateway_queue_wait_seconds", "pool", pools=POOLS), "s"),
    ]


def _or_zero(expr: str) -> str:
    """``expr`` by pool, or 0 for a pool that admitted requests and has no such series (a
    pool that never hedged has no ``gateway_hedges_total``: a sum would drop it)."""
    admitted = f"sum by (pool) (rate(gateway_admitted_total{POOLS}[5m]))"
    return f"(sum by (pool) ({expr}) or {admitted} * 0)"


def _after_dispatch() -> list[Panel]:
    """Per pool: hedges by event, the extra load they and failovers add, failovers before
    the first token by reason, continuations of streams cut short by result."""
    sent = _or_zero('rate(gateway_hedges_total{pool=~"$pool",event="sent"}[5m])')
    moved = _or_zero(f"rate(gateway_failovers_total{POOLS}[5m])")
    admitted = f"sum by (pool) (rate(gateway_admitted_total{POOLS}[5m]))"
    return [
        (
            "Hedges per second by event (sent, won, cancelled)",
            [_agg("sum", "pool, event", f"rate(gateway_hedges_total{POOLS}[1m])")],
            "reqps",
        ),
        (
            "Extra load: (hedges sent + failovers) / admitted, over 5 min",
            [(f"({sent} + {moved}) / {admitted}", "{{pool}}")],
            "percentunit",
        ),
        (
            "Failovers before the first token per second by reason (stall, error, taken back)",
            [_agg("sum", "pool, reason", f"rate(gateway_failovers_total{POOLS}[1m])")],
            "reqps",
        ),
        (
            "Streams cut short per second by result (ok: continued, failed, impossible)",
            [_agg("sum", "pool, result", f"rate(gateway_continuations_total{POOLS}[1m])")],
            "reqps",
        ),
    ]


def _latency() -> list[Panel]:
    return [
        ("TTFT by pool", _quantiles(TTFT, "pool"), "s"),
        (
            "TTFT p99 by pool and length class",
            [(_q99(TTFT, "pool, length"), _legend("pool, length"))],
            "s",
        ),
        ("Time per output token by pool", _quantiles(TPOT, "pool"), "s"),
        (
            "TPOT p99 by pool and length class",
            [(_q99(TPOT, "pool, length"), _legend("pool, length"))],
            "s",
        ),
        ("Gateway overhead", [(_q99("gateway_overhead_seconds", ""), "p99")], "s"),
        (
            "Requests by status (every answer: served, refused, client errors)",
            [_agg("sum", "status", "rate(gateway_requests_total[1m])")],
            "reqps",
        ),
        (
            "Error rate: share of answers by status class",
            [
                (
                    'sum(rate(gateway_requests_total{status=~"5.."}[5m]))'
                    " / sum(rate(gateway_requests_total[5m]))",
                    "5xx (refusals included)",
                ),
                (
                    'sum(rate(gateway_requests_total{status=~"4.."}[5m]))'
                    " / sum(rate(gateway_requests_total[5m]))",
                    "4xx",
                ),
            ],
            "percentunit",
        ),
        (
            "Refused per second by tenant limits (429, before any pool is chosen)",
            [_agg("sum", "type", 'rate(gateway_client_errors_total{status="429"}[1m])')],
            "reqps",
        ),
        (
            "Requests by tenant and status (refusals included)",
            [_agg("sum", "tenant, status", "rate(gateway_tenant_requests_total[1m])")],
            "reqps",
        ),
        (
            "Tokens by tenant",
            [_agg("sum", "tenant, kind", "rate(gateway_tenant_tokens_total[1m])")],
            "short",
        ),
    ]


def _caches() -> list[Panel]:
    return [
        (
            "Gateway cache results",
            [_agg("sum", "result", "rate(gateway_cache_lookups_total[5m])")],
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
            [_agg("avg", "backend", "gateway_backend_prefix_cache_hit_rate")],
            "percentunit",
        ),
        (
            "Prefix held by the chosen replica (routing)",
            _quantiles("gateway_route_prefix_match_ratio", "pool", (0.5,)),
            "percentunit",
        ),
        (
            "Context compressions by method",
            [
                _agg("sum", "pool, method", "rate(gateway_compressions_total[5m])"),
                _agg(
                    "sum",
                    "pool",
                    "rate(gateway_compression_saved_tokens_total[5m])",
                    "tokens saved/s ",
                ),
            ],
            "short",
        ),
        (
            "Prefix breaks by cause",
            [_agg("sum", "cause", "rate(gateway_prefix_break_total[5m])")],
            "reqps",
        ),
    ]


def _backends() -> list[Panel]:
    return [
        ("Engine queue (scraped)", [_agg("max", "backend", "gateway_backend_waiting")], "short"),
        (
            "Running in engine (scraped)",
            [_agg("max", "backend", "gateway_backend_running")],
            "short",
        ),
        (
            "KV cache usage (scraped)",
            [_agg("max", "backend", "gateway_backend_kv_cache_usage")],
            "percentunit",
        ),
        (
            "Speculative decoding acceptance",
            [_agg("avg", "backend", "gateway_backend_spec_decode_acceptance")],
            "percentunit",
        ),
        (
            "Health and breaker",
            [
                _agg("min", "backend", "gateway_backend_healthy", "healthy "),
                _agg("max", "backend", "gateway_backend_breaker_state", "breaker "),
            ],
            "short",
        ),
        (
            "Retries and upstream errors",
            [
                _agg("sum", "pool, reason", "rate(gateway_retries_total[1m])", "retry "),
                _agg("sum", "backend, kind", "rate(gateway_upstream_errors_total[1m])", "error "),
            ],
            "reqps",
        ),
        (
            # Each worker (and each replica) counts its own: the backend has their sum.
            "In flight per backend (gateway)",
            [_agg("sum", "backend", "gateway_backend_inflight")],
            "short",
        ),
        (
            "Cancellations by phase",
            [_agg("sum", "phase", "rate(gateway_cancellations_total[1m])")],
            "reqps",
        ),
    ]


def dashboards() -> dict[str, dict[str, Any]]:
    return {
        "load-shedding.json": _dashboard(
            "lg-shedding",
            "latency-gateway · load shedding",
            _load_shedding(),
            (_pool_variable("gateway_queue_depth"),),
        ),
        "after-dispatch.json": _dashboard(
            "lg-after-dispatch",
            "latency-gateway · after dispatch",
            _after_dispatch(),
            (_pool_variable("gateway_admitted_total"),),
        ),
        "latency.json": _dashboard("lg-latency", "latency-gateway · latency", _latency()),
        "caches.json": _dashboard("lg-caches", "latency-gateway · caches", _caches()),
        "backends.json": _dashboard("lg-backends", "latency-gateway · backends", _backends()),
    }


def render(dashboard: dict[str, Any]) -> str:
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


def main() -> int:
    for name, dashboard in dashboards().items():
        (HERE / name).write_text(render(dashboard))
    return 0


if __name__ == "__main__":
    sys.exit(main())
