"""Prometheus metrics of one simulated replica, named as vLLM or TGI name them.

Engine state (queue lengths, KV usage, cumulative counters) is read at scrape time by a
custom collector, so the engine loop pays nothing for it (vLLM's waiting count as vLLM takes
it, once per step after scheduling: ``Engine.reported_waiting``; TGI's queue as it
stands); latency histograms are observed by the driver once per request per step. Every
replica owns its ``CollectorRegistry``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from loadtests.sim.driver import RequestStream
from loadtests.sim.engine import Engine

_LATENCY_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
_TOKEN_BUCKETS = (1.0, 8.0, 16.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0)


class VllmEngineCollector(Collector):
    """vLLM gauges and counters read from the engine on each scrape."""

    def __init__(self, engine: Engine, model_name: str, finished: dict[str, int]) -> None:
        self._engine = engine
        self._labels = {"model_name": model_name}
        self._finished = finished

    def _gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=list(self._labels))
        g.add_metric(list(self._labels.values()), value)
        return g

    def _counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        c = CounterMetricFamily(name, doc, labels=list(self._labels))
        c.add_metric(list(self._labels.values()), value)
        return c

    def collect(self) -> Iterator[Metric]:
        e, c = self._engine, self._engine.counters
        usage = e.kv.usage()
        yield self._gauge("vllm:num_requests_running", "Requests in the batch.", e.num_running)
        yield self._gauge("vllm:num_requests_waiting", "Requests waiting.", e.reported_waiting)
        yield self._gauge("vllm:kv_cache_usage_perc", "KV-cache usage (1 = full).", usage)
        yield self._gauge("vllm:gpu_cache_usage_perc", "KV-cache usage (older name).", usage)
        yield self._counter("vllm:prefix_cache_queries", "Queried tokens.", c.prefix_queries)
        yield self._counter("vllm:prefix_cache_hits", "Prefix-cache hit tokens.", c.prefix_hits)
        yield self._counter("vllm:num_preemptions", "Preemptions.", c.preemptions)
        yield self._counter("vllm:prompt_tokens", "Prefilled prompt tokens.", c.prompt_tokens)
        yield self._counter("vllm:generation_tokens", "Generated tokens.", c.generation_tokens)
        yield from self._success()
        if e.profile.speculative is not None:
            yield self._counter("vllm:spec_decode_num_drafts", "Drafts.", c.spec_drafts)
            yield self._counter(
                "vllm:spec_decode_num_draft_tokens", "Draft tokens.", c.spec_draft_tokens
            )
            yield self._counter(
                "vllm:spec_decode_num_accepted_tokens", "Accepted.", c.spec_accepted_tokens
            )

    def _success(self) -> Iterator[Metric]:
        c = CounterMetricFamily(
            "vllm:request_success",
            "Finished requests by reason.",
            labels=["model_name", "finished_reason"],
        )
        for reason, n in sorted(self._finished.items()):
            c.add_metric([self._labels["model_name"], reason], n)
        yield c


class VllmMetrics:
    """vLLM-named instruments; implements the driver's ``Observer``."""

    def __init__(self, registry: CollectorRegistry, engine: Engine, model_name: str) -> None:
        self.finished: dict[str, int] = {"stop": 0, "length": 0, "abort": 0}
        registry.register(VllmEngineCollector(engine, model_name, self.finished))
        hist = _histograms(registry, "vllm:", ["model_name"])
        self._ttft, self._itl, self._e2e, self._queue = (h.labels(model_name) for h in hist)

    def on_tokens(self, stream: RequestStream, n: int, gap_s: float, first: bool) -> None:
        (self._ttft if first else self._itl).observe(gap_s)

    def on_finished(self, stream: RequestStream, now: float) -> None:
        self.finished[stream.finish_reason or "stop"] += 1
        self._e2e.observe(now - stream.arrival)
        if stream.admitted is not None:
            self._queue.observe(stream.admitted - stream.arrival)

    def on_aborted(self, stream: RequestStream, now: float) -> None:
        self.finished["abort"] += 1


def _histograms(registry: CollectorRegistry, prefix: str, labels: list[str]) -> list[Histogram]:
    names = (
        ("time_to_first_token_seconds", "Time to first token."),
        ("inter_token_latency_seconds", "Time between engine outputs of a request."),
        ("e2e_request_latency_seconds", "End-to-end request latency."),
        ("request_queue_time_seconds", "Time spent waiting before the first schedule."),
    )
    return [
        Histogram(prefix + n, doc, labels, registry=registry, buckets=_LATENCY_BUCKETS)
        for n, doc in names
    ]


class TgiEngineCollector(Collector):
    """TGI queue and batch gauges read from the engine on each scrape."""

    def __init__(self, engine: Engine, counts: dict[str, int]) -> None:
        self._engine = engine
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        e = self._engine
        yield GaugeMetricFamily("tgi_queue_size", "Requests waiting.", value=e.num_waiting)
        yield GaugeMetricFamily("tgi_batch_current_size", "Batch size.", value=e.num_running)
        yield GaugeMetricFamily(
            "tgi_batch_current_max_tokens", "Max tokens of the batch.", value=e.batch_max_tokens()
        )
        for name, value in sorted(self._counts.items()):
            # TGI's exporter writes counters without the _total suffix; keep the exact name.
            m = Metric(name, "Request count.", "unknown")
            m.add_sample(name, {}, value)
            yield m


class TgiMetrics:
    """TGI-named request histograms; implements the driver's ``Observer``."""

    def __init__(self, registry: CollectorRegistry, engine: Engine) -> None:
        self.counts: dict[str, int] = {
            "tgi_request_count": 0,
            "tgi_request_success": 0,
            "tgi_request_failure": 0,
        }
        registry.register(TgiEngineCollector(engine, self.counts))

        def hist(name: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, name, registry=registry, buckets=buckets)

        self._duration = hist("tgi_request_duration", _LATENCY_BUCKETS)
        self._queue = hist("tgi_request_queue_duration", _LATENCY_BUCKETS)
        self._inference = hist("tgi_request_inference_duration", _LATENCY_BUCKETS)
        self._per_token = hist("tgi_request_mean_time_per_token_duration", _LATENCY_BUCKETS)
        self._generated = hist("tgi_request_generated_tokens", _TOKEN_BUCKETS)
        self._input = hist("tgi_request_input_length", _TOKEN_BUCKETS)

    def on_tokens(self, stream: RequestStream, n: int, gap_s: float, first: bool) -> None:
        if first:
            self.counts["tgi_request_count"] += 1

    def on_finished(self, stream: RequestStream, now: float) -> None:
        self.counts["tgi_request_success"] += 1
        admitted = stream.admitted if stream.admitted is not None else stream.arrival
        self._duration.observe(now - stream.arrival)
        self._queue.observe(admitted - stream.arrival)
        self._inference.observe(now - admitted)
        self._per_token.observe((now - admitted) / max(1, stream.completion_tokens))
        self._generated.observe(stream.completion_tokens)
        self._input.observe(stream.prompt_tokens)

    def on_aborted(self, stream: RequestStream, now: float) -> None:
        self.counts["tgi_request_failure"] += 1
