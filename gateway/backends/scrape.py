"""Read a backend's load from its Prometheus ``/metrics``: queue, running, KV cache usage.

vLLM: ``vllm:num_requests_waiting``, ``vllm:num_requests_running``, ``vllm:kv_cache_usage_perc``
(older releases: ``vllm:gpu_cache_usage_perc``). TGI: ``tgi_queue_size``,
``tgi_batch_current_size``. Samples of one name are summed over their labels (one engine may
serve several models). Engines without metrics (``openai``) are not scraped.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from gateway.policy.schema import Engine


@dataclass(frozen=True, slots=True)
class Load:
    waiting: float = 0.0
    running: float = 0.0
    kv_usage: float = 0.0  # 0..1


_NAMES: dict[Engine, dict[str, tuple[str, ...]]] = {
    Engine.VLLM: {
        "waiting": ("vllm:num_requests_waiting",),
        "running": ("vllm:num_requests_running",),
        "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    },
    Engine.TGI: {
        "waiting": ("tgi_queue_size",),
        "running": ("tgi_batch_current_size",),
        "kv_usage": (),
    },
}


def scrapes(engine: Engine) -> bool:
    return engine in _NAMES


def parse_load(engine: Engine, text: str) -> Load:
    """The load an engine reports in its metrics text (ValueError if it is not Prometheus)."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    names = _NAMES[engine]
    return Load(
        waiting=_first(totals, names["waiting"]),
        running=_first(totals, names["running"]),
        kv_usage=min(1.0, max(0.0, _first(totals, names["kv_usage"]))),
    )


def _first(totals: dict[str, float], names: tuple[str, ...]) -> float:
    for name in names:
        if name in totals:
            return totals[name]
    return 0.0
