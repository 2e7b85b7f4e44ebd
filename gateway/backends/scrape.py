"""Read a backend's load from its Prometheus ``/metrics``: queue, running, KV cache usage,
and the counters behind its prefix-cache hit rate and speculative-decoding acceptance.

vLLM: ``vllm:num_requests_waiting``, ``vllm:num_requests_running``, ``vllm:kv_cache_usage_perc``
(older releases: ``vllm:gpu_cache_usage_perc``), ``vllm:prefix_cache_hits_total`` /
``vllm:prefix_cache_queries_total``, ``vllm:spec_decode_num_accepted_tokens_total`` /
``vllm:spec_decode_num_draft_tokens_total``. TGI: ``tgi_queue_size``,
``tgi_batch_current_size``. llama.cpp's server (``--metrics``):
``llamacpp:requests_deferred`` (waiting for a slot), ``llamacpp:requests_processing`` (slots
busy), ``llamacpp:prompt_tokens_cached_total`` (prompt tokens reused) over that plus
``llamacpp:prompt_tokens_total`` (which leaves the reused ones out); no KV usage. Samples of
one name are summed over their labels (one engine may serve several models). Engines without
metrics (``openai``) are not scraped. Rates come from two successive reads
(``windowed_ratio``): the counters grow for the engine's lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from gateway.schema import Engine


@dataclass(frozen=True, slots=True)
class Load:
    waiting: float = 0.0
    running: float = 0.0
    kv_usage: float = 0.0  # 0..1
    prefix_hits: float = 0.0  # counters, since the engine started
    prefix_queries: float = 0.0
    spec_accepted: float = 0.0
    spec_drafted: float = 0.0


_NAMES: dict[Engine, dict[str, tuple[str, ...]]] = {
    Engine.VLLM: {
        "waiting": ("vllm:num_requests_waiting",),
        "running": ("vllm:num_requests_running",),
        "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        "prefix_hits": ("vllm:prefix_cache_hits_total",),
        "prefix_queries": ("vllm:prefix_cache_queries_total",),
        "spec_accepted": ("vllm:spec_decode_num_accepted_tokens_total",),
        "spec_drafted": ("vllm:spec_decode_num_draft_tokens_total",),
    },
    Engine.TGI: {
        "waiting": ("tgi_queue_size",),
        "running": ("tgi_batch_current_size",),
    },
    Engine.LLAMACPP: {
        "waiting": ("llamacpp:requests_deferred",),
        "running": ("llamacpp:requests_processing",),
        "prefix_hits": ("llamacpp:prompt_tokens_cached_total",),
        "prefix_queries": ("llamacpp:prompt_tokens_total",),
        "spec_accepted": ("llamacpp:spec_decode_num_accepted_tokens_total",),
        "spec_drafted": ("llamacpp:spec_decode_num_draft_tokens_total",),
    },
}

# Engines whose prompt-token counter leaves out the tokens reused from the cache.
_QUERIES_EXCLUDE_HITS = frozenset({Engine.LLAMACPP})


def scrapes(engine: Engine) -> bool:
    return engine in _NAMES


def parse_load(engine: Engine, text: str) -> Load:
    """The load an engine reports in its metrics text (ValueError if it is not Prometheus)."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    values = {field: _first(totals, names) for field, names in _NAMES[engine].items()}
    values["kv_usage"] = min(1.0, max(0.0, values.get("kv_usage", 0.0)))
    if engine in _QUERIES_EXCLUDE_HITS:
        values["prefix_queries"] = values["prefix_queries"] + values["prefix_hits"]
    return Load(**values)


def windowed_ratio(num: float, den: float, prev_num: float, prev_den: float) -> float | None:
    """``Δnum / Δden`` between two reads of two counters; None without new events, or when
    a counter went back (the engine restarted: the next pair of reads will tell)."""
    d_num, d_den = num - prev_num, den - prev_den
    if d_den <= 0 or d_num < 0:
        return None
    return min(1.0, d_num / d_den)


def _first(totals: dict[str, float], names: tuple[str, ...]) -> float:
    for name in names:
        if name in totals:
            return totals[name]
    return 0.0
