"""Every worker's Prometheus text as one, each sample labelled with its worker."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.host.metrics_merge import labelled, merge


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("up 1.0", 'up{worker="3"} 1.0'),
        ('x_total{a="b"} 2.0', 'x_total{worker="3",a="b"} 2.0'),
        ("x{} 2.0", 'x{worker="3"} 2.0'),
        ('x{a="q\\"}{"} 1', 'x{worker="3",a="q\\"}{"} 1'),
        ("x 1 1700000000000", 'x{worker="3"} 1 1700000000000'),
    ],
)
def test_a_sample_gets_the_worker_label(line: str, expected: str) -> None:
    assert labelled(line, "3") == expected


WORKER = """# HELP gateway_requests_total Requests
# TYPE gateway_requests_total counter
gateway_requests_total{{pool="p"}} {n}
# HELP gateway_inflight_requests In flight
# TYPE gateway_inflight_requests gauge
gateway_inflight_requests{{pool="p"}} {g}
"""


def test_families_appear_once_with_every_workers_samples() -> None:
    text = merge({"0": WORKER.format(n=3.0, g=1.0), "1": WORKER.format(n=4.0, g=0.0)})
    assert text.count("# HELP gateway_requests_total") == 1
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = families["gateway_requests"].samples
    assert sorted((s.labels["worker"], s.value) for s in requests) == [("0", 3.0), ("1", 4.0)]
    assert sum(s.value for s in requests) == 7.0
    gauge = families["gateway_inflight_requests"].samples
    assert [s.labels for s in gauge] == [{"worker": "0", "pool": "p"}, {"worker": "1", "pool": "p"}]


def test_a_family_only_one_worker_has_is_kept() -> None:
    extra = "# HELP only_here x\n# TYPE only_here gauge\nonly_here 1.0\n"
    text = merge({"0": WORKER.format(n=1, g=0), "1": WORKER.format(n=1, g=0) + extra})
    names = [f.name for f in text_string_to_metric_families(text)]
    assert names == ["gateway_requests", "gateway_inflight_requests", "only_here"]
