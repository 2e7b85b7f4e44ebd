"""Every Prometheus instrument of the gateway, defined once on an injected registry.

Instruments with a label a client or backend can influence are ``Bounded``: their values
are mapped into the active policy's sets (``metric_labels.py``); so are those labelled on
every request by values the policy or the code names (``fixed``: only their children kept).
"""

from __future__ import annotations

from functools import partial

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gateway.loop_metrics import LoopCounter, LoopGauge, LoopHistogram
from gateway.metric_labels import Bounded, LabelBounds

# LLM latencies span milliseconds (cache hits, short prompts) to minutes (long generations).
LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5,
    10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip
# Decode steps: a few milliseconds on a fast GPU to a few hundred under heavy batching.
TPOT_BUCKETS = (
    0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0,
)  # fmt: skip
OVERHEAD_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
)  # fmt: skip


class GatewayMetrics:
    """The gateway's instruments; one instance per app, on the registry it is given."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        # Every instrument on the injected registry, none on prometheus_client's global one.
        counter = partial(Counter, registry=registry)
        gauge = partial(Gauge, registry=registry)
        histogram = partial(Histogram, registry=registry)
        # Updated on (nearly) every request, on the loop: no lock per value (loop_metrics.py).
        loop_counter = partial(LoopCounter, registry=registry)
        loop_histogram = partial(LoopHistogram, registry=registry)
        loop_gauge = partial(LoopGauge, registry=registry)
        self.bounds = b = LabelBounds()

        def per_request(
            name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
        ) -> Bounded[LoopHistogram]:
            """A loop histogram labelled by values the code names (children kept)."""
            metric = loop_histogram(name, doc, labels, buckets=buckets)
            return Bounded(metric, *(b.fixed for _ in labels))

        self.requests = Bounded(
            loop_counter(
                "gateway_requests",
                "Requests finished, by public model, pool, backend, HTTP status and cache "
                "result (a cache hit: pool and backend none)",
                ["model", "pool", "backend", "status", "cache"],
            ),
            b.model,
            b.pool,
            b.backend,
            b.status,
            b.cache,
        )
        self.inflight = Bounded(
            loop_gauge(
                "gateway_inflight_requests", "Requests being served upstream, by pool", ["pool"]
            ),
            b.fixed,
        )

        def latency(name: str, until: str) -> Bounded[LoopHistogram]:
            doc = f"Time from request arrival to {until}, by pool, length class and cache result"
            metric = loop_histogram(name, doc, ["pool", "length", "cache"], buckets=LATENCY_BUCKETS)
            return Bounded(metric, b.pool, b.fixed, b.cache)

        self.ttft = latency(
            "gateway_time_to_first_token_seconds", "the first token sent to the client"
        )
        self.e2e = latency("gateway_request_duration_seconds", "the last byte sent to the client")
        self.tpot = per_request(
            "gateway_time_per_output_token_seconds",
            "Mean time between output tokens of a streamed response, after the first",
            ["pool", "length"],
            TPOT_BUCKETS,
        )
        self.overhead = loop_histogram(
            "gateway_overhead_seconds",
            "Gateway time before the upstream request is sent (parse, policy, cache lookup, "
            "pick), queue wait and embedding excluded (gateway_queue_wait_seconds, "
            "gateway_embedding_wait_seconds)",
            buckets=OVERHEAD_BUCKETS,
        )
        self.upstream_errors = Bounded(
            counter(
                "gateway_upstream_errors",
                "Failed upstream exchanges, by backend and kind",
                ["backend", "kind"],
            ),
            b.backend,
            b.error_kind,
        )
        self.client_errors = Bounded(
            counter(
                "gateway_client_errors",
                "Requests refused before reaching a backend, by HTTP status and error type",
                ["status", "type"],
            ),
            b.status,
            b.fixed,
        )
        # Per tenant (the policy's auth.tenants: a bounded set) whatever the outcome: served,
        # answered from the cache, or refused (rate limit, shedding, bad input).
        self.tenant_requests = Bounded(
            loop_counter(
                "gateway_tenant_requests",
                "Requests finished, by tenant, public model (unknown: not in the policy) and "
                "HTTP status (when tenants are set)",
                ["tenant", "model", "status"],
            ),
            b.tenant,
            b.model,
            b.status,
        )
        self.tenant_tokens = Bounded(
            loop_counter(
                "gateway_tenant_tokens",
                "Tokens of finished requests, by tenant and kind (prompt | completion)",
                ["tenant", "kind"],
            ),
            b.tenant,
            b.fixed,
        )
        self.cancellations = counter(
            "gateway_cancellations",
            "Requests whose client left before the end, by phase "
            "(queued | first_token | streaming | non_streaming)",
            ["phase"],
        )
        self.retries = Bounded(
            counter(
                "gateway_retries",
                "Attempts retried on another backend or pool, by pool and reason",
                ["pool", "reason"],
            ),
            b.pool,
            b.error_kind,
        )
        self.retry_budget_exhausted = counter(
            "gateway_retry_budget_exhausted",
            "Retries refused because the retry budget was spent",
        )
        self.fallbacks = Bounded(
            counter(
                "gateway_fallbacks",
                "Requests served by a fallback pool, by the pool asked for and the pool that "
                "served",
                ["from_pool", "to_pool"],
            ),
            b.pool,
            b.pool,
        )
        self.ejections = counter(
            "gateway_backend_ejections",
            "Times a backend's circuit breaker tripped",
            ["backend"],
        )
        self.breaker_state = gauge(
            "gateway_backend_breaker_state",
            "Circuit breaker state per backend: 0 closed, 1 half-open, 2 open",
            ["backend"],
        )
        self.admitted = Bounded(
            loop_counter(
                "gateway_admitted", "Requests given a slot by a pool's admission, by pool", ["pool"]
            ),
            b.fixed,
        )
        self.queue_wait = per_request(
            "gateway_queue_wait_seconds",
            "Time requests waited in the gateway's queue for a slot, by pool",
            ["pool"],
            LATENCY_BUCKETS,
        )
        self.shed = counter(
            "gateway_shed",
            "Requests refused by admission, by pool, reason, priority and cause (deadline | "
            "saturated | hard_cap)",
            ["pool", "reason", "priority", "cause"],
        )
        self.pool_state = gauge(
            "gateway_pool_state",
            "1 for each pool's current state (nominal | saturated | overloaded), else 0",
            ["pool", "state"],
        )
        self.queue_depth = gauge(
            "gateway_queue_depth",
            "Requests waiting for a slot, by pool, lane and priority",
            ["pool", "lane", "priority"],
        )
        self.estimated_wait = gauge(
            "gateway_estimated_wait_seconds",
            "Estimated wait of a new standard short request, by pool (-1 unknown)",
            ["pool"],
        )
        # SLO-first admission: the objective, what was predicted, how wrong it was, and the
        # Retry-After advice given with each refusal.
        self.ttft_objective = gauge(
            "gateway_ttft_objective_seconds",
            "TTFT objective of a standard short request, by pool",
            ["pool"],
        )
        self.ttft_predicted = per_request(
            "gateway_ttft_predicted_seconds",
            "Predicted TTFT of admitted requests at admission, by pool",
            ["pool"],
            LATENCY_BUCKETS,
        )
        self.ttft_prediction_error = per_request(
            "gateway_ttft_prediction_error_seconds",
            "|observed - predicted| backend TTFT (observation-backed), by pool and direction",
            ["pool", "direction"],
            LATENCY_BUCKETS,
        )
        self.retry_after = histogram(
            "gateway_retry_after_seconds",
            "Retry-After advised with refusals, by pool",
            ["pool"],
            buckets=(1, 2, 3, 5, 10, 20, 30, 60, 120),
        )
        self.ladder_step = gauge(
            "gateway_overload_step",
            "Active step of the overload ladder, by pool (0 normal)",
            ["pool"],
        )
        self.concurrency_limit = gauge(
            "gateway_concurrency_limit",
            "The pool's current concurrency limit (static or adaptive)",
            ["pool"],
        )
        self.cluster_mode = gauge(
            "gateway_cluster_mode",
            "Cluster admission per pool: 1 the cluster limit through Redis, 0 local fallback",
            ["pool"],
        )
        self.cluster_leases = gauge(
            "gateway_cluster_leases",
            "Leases in flight across the cluster, by pool, as last read from Redis",
            ["pool"],
        )
        self.cluster_held = gauge(
            "gateway_cluster_held_leases",
            "Leases this replica holds, by pool",
            ["pool"],
        )
        self.cluster_replicas = gauge(
            "gateway_cluster_replicas",
            "Live gateway replicas serving the pool, as last read from Redis",
            ["pool"],
        )
        self.redis_errors = counter(
            "gateway_redis_errors",
            "Redis calls of cluster admission that failed or timed out, by operation",
            ["op"],
        )
        self.rewrite_fragments = counter(
            "gateway_rewrite_fragments",
            "Volatile fragments moved out of shared prompt prefixes, by kind",
            ["kind"],
        )
        self.compressions = counter(
            "gateway_compressions",
            "Conversations compressed to fit a pool's token budget, by pool and method "
            "(truncated | summary | partial_summary)",
            ["pool", "method"],
        )
        self.compression_saved_tokens = counter(
            "gateway_compression_saved_tokens",
            "Prompt tokens removed by compression, by pool",
            ["pool"],
        )
        self.compression_summaries = counter(
            "gateway_compression_summaries",
            "Background summaries of dropped turns, by result (stored | check_failed | error | "
            "timeout | skipped_busy | skipped_too_long)",
            ["result"],
        )
        self.compression_summary_check_failures = counter(
            "gateway_compression_summary_check_failures",
            "Summaries refused because they lost a number, date, identifier or name",
        )
        self.prefix_breaks = counter(
            "gateway_prefix_break",
            "Session prompts that stopped sharing the previous prompt's prefix, by cause",
            ["cause"],
        )
        self.prefix_break_offset = histogram(
            "gateway_prefix_break_offset_tokens",
            "Where (in tokens) a session's prompt diverged from the previous one",
            buckets=(16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
        )
        self.prefix_match = per_request(
            "gateway_route_prefix_match_ratio",
            "Share of the prompt's prefix blocks the chosen replica is believed to hold",
            ["pool"],
            (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0),
        )
        # The backends' own figures, re-exported per backend (read at scrape time).
        per_backend = partial(gauge, labelnames=["backend", "pool"])
        self.backend_waiting = per_backend(
            "gateway_backend_waiting", "Requests waiting in the engine (scraped)"
        )
        self.backend_running = per_backend(
            "gateway_backend_running", "Requests running in the engine (scraped)"
        )
        self.backend_kv_usage = per_backend(
            "gateway_backend_kv_cache_usage", "KV cache usage 0..1 (scraped)"
        )
        self.backend_prefix_hit_rate = per_backend(
            "gateway_backend_prefix_cache_hit_rate",
            "Prompt tokens found in the engine's prefix cache over the last scrape interval",
        )
        self.backend_spec_acceptance = per_backend(
            "gateway_backend_spec_decode_acceptance",
            "Accepted share of speculative draft tokens over the last scrape interval",
        )
        self.backend_inflight = per_backend(
            "gateway_backend_inflight", "Requests the gateway has in flight there"
        )
        self.backend_chars_per_token = per_backend(
            "gateway_backend_chars_per_token",
            "Prompt characters per token the backend counts, learned from its usage",
        )
        self.cache_lookups = Bounded(
            loop_counter(
                "gateway_cache_lookups",
                "Response cache lookups, by result (miss | exact | semantic | bypass)",
                ["result"],
            ),
            b.fixed,
        )
        self.cache_guard_refusals = counter(
            "gateway_cache_guard_refusals",
            "Semantic candidates refused, by reason (a guard reason, verifier, or an entry's "
            "own evidence: tightened | exact_only)",
            ["reason"],
        )
        self.cache_verifications = counter(
            "gateway_cache_verifications",
            "Sampled semantic hits also asked of the backend, by outcome "
            "(agree | disagree | skipped | failed)",
            ["outcome"],
        )
        self.cache_tightened = counter(
            "gateway_cache_tightened",
            "Entries whose threshold rose after a disagreeing verification, by step "
            "(raised | exact_only)",
            ["step"],
        )
        self.cache_lookup_seconds = loop_histogram(
            "gateway_cache_lookup_seconds",
            "Time of a cache lookup, embedding included",
            buckets=OVERHEAD_BUCKETS,
        )
        self.cache_store_errors = counter(
            "gateway_cache_store_errors",
            "Cache store operations that failed (served as misses), by operation",
            ["op"],
        )
        self.cache_entries = gauge("gateway_cache_entries", "Entries in the local semantic index")
        self.embedding_batch_seconds = histogram(
            "gateway_embedding_batch_seconds",
            "Time to embed one micro-batch",
            buckets=(*OVERHEAD_BUCKETS, 0.25, 0.5, 1.0),
        )
        self.embedding_wait = loop_histogram(
            "gateway_embedding_wait_seconds",
            "Time a request waited for its question's embedding (micro-batch and model), "
            "timed-out waits included",
            buckets=(*OVERHEAD_BUCKETS, 0.25, 0.5, 1.0, 2.5),
        )
        self.embedding_batch_size = histogram(
            "gateway_embedding_batch_size",
            "Texts per embedding micro-batch",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
        )
        self.backend_healthy = gauge(
            "gateway_backend_healthy",
            "1 when the backend passes health checks, 0 when ejected",
            ["backend", "pool"],
        )
        self.policy_reloads = counter(
            "gateway_policy_reloads",
            "Policy reload attempts, by result (success | failure)",
            ["result"],
        )
        self.policy_info = gauge(
            "gateway_policy_info", "The active policy: 1 for its digest", ["digest"]
        )
