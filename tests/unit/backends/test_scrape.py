"""Reading vLLM, TGI and llama.cpp load from their metrics text, and rates between two reads."""

from __future__ import annotations

import pytest

from gateway.backends.scrape import Load, parse_load, scrapes, windowed_ratio
from gateway.schema import Engine

VLLM = """\
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="a"} 3.0
vllm:num_requests_waiting{model_name="b"} 1.0
vllm:num_requests_running{model_name="a"} 7.0
vllm:kv_cache_usage_perc{model_name="a"} 0.42
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{model_name="a"} 1000.0
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{model_name="a"} 600.0
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{model_name="a"} 80.0
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{model_name="a"} 50.0
"""
OLD_VLLM = "vllm:gpu_cache_usage_perc 1.5\nvllm:num_requests_waiting 2\n"
TGI = "tgi_queue_size 4\ntgi_batch_current_size 9\n"


def test_vllm_load_sums_models_and_reads_counters() -> None:
    assert parse_load(Engine.VLLM, VLLM) == Load(
        waiting=4.0,
        running=7.0,
        kv_usage=0.42,
        prefix_hits=600.0,
        prefix_queries=1000.0,
        spec_accepted=50.0,
        spec_drafted=80.0,
    )


def test_older_vllm_name_and_clamped_usage() -> None:
    assert parse_load(Engine.VLLM, OLD_VLLM) == Load(waiting=2.0, kv_usage=1.0)


def test_tgi_load() -> None:
    assert parse_load(Engine.TGI, TGI) == Load(waiting=4.0, running=9.0)


# As llama.cpp's server prints it (``--metrics``): counters first, then gauges.
LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 400
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 1.2e+03
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 2
"""


def test_llamacpp_load_counts_cached_tokens_among_the_queries() -> None:
    assert parse_load(Engine.LLAMACPP, LLAMACPP) == Load(
        waiting=2.0, running=4.0, prefix_hits=1200.0, prefix_queries=1600.0
    )


def test_openai_engines_are_not_scraped() -> None:
    assert not scrapes(Engine.OPENAI)
    assert scrapes(Engine.VLLM)
    assert scrapes(Engine.TGI)
    assert scrapes(Engine.LLAMACPP)


def test_not_prometheus_text_is_an_error() -> None:
    with pytest.raises(ValueError, match="Invalid"):
        parse_load(Engine.VLLM, "{not metrics")


# id -> (num, den, prev_num, prev_den, ratio)
RATIOS = {
    "new events": (700.0, 1200.0, 600.0, 1000.0, 0.5),
    "all hits": (900.0, 1300.0, 600.0, 1000.0, 1.0),
    "no new events": (600.0, 1000.0, 600.0, 1000.0, None),
    "engine restarted": (10.0, 20.0, 600.0, 1000.0, None),
    "first read": (600.0, 1000.0, 0.0, 0.0, 0.6),
}


@pytest.mark.parametrize(("num", "den", "pnum", "pden", "want"), RATIOS.values(), ids=RATIOS)
def test_windowed_ratio(num: float, den: float, pnum: float, pden: float, want: float) -> None:
    assert windowed_ratio(num, den, pnum, pden) == want


def test_fold_load_keeps_rates_between_reads() -> None:
    from gateway.backends.load_watch import fold_load
    from tests.unit.gateway.helpers import state

    backend = state("a")
    fold_load(
        backend, Load(prefix_hits=60, prefix_queries=100, spec_accepted=5, spec_drafted=10), 1.0
    )
    assert (backend.prefix_hit_rate, backend.spec_acceptance) == (0.6, 0.5)
    fold_load(
        backend, Load(prefix_hits=150, prefix_queries=200, spec_accepted=5, spec_drafted=10), 2.0
    )
    assert (backend.prefix_hit_rate, backend.spec_acceptance) == (0.9, 0.5)  # no new drafts
    fold_load(backend, Load(waiting=3, prefix_hits=150, prefix_queries=200), 3.0)
    assert backend.load.waiting == 3
    assert backend.prefix_hit_rate == 0.9  # nothing new: the last rate stands
