"""Dashboard snapshots between workers: through JSON unchanged, and added up as the host's."""

from __future__ import annotations

from gateway.dashboard.snapshot_wire import combined, decoded, encoded
from gateway.dashboard.window import Snapshot


def _snap(at: float, admitted: float, queue: float, le1: float) -> Snapshot:
    return Snapshot(
        at,
        {"admitted": {"p": admitted}, "hedges:sent": {"p": admitted / 4}},
        {"ttft": {"p": ((0.5, le1), (1.0, le1 + 1), (float("inf"), le1 + 2))}},
        {"queue_depth": {"p": queue}, "objective": {"p": 2.0}},
        {"p": {("saturated", "standard"): admitted / 2}},
    )


def test_a_snapshot_survives_the_wire() -> None:
    snap = _snap(12.5, 4.0, 1.0, 3.0)
    assert decoded(encoded(snap)) == snap


def test_the_hosts_snapshot_adds_every_workers_figures() -> None:
    host = combined(20.0, [_snap(19.9, 4.0, 1.0, 3.0), _snap(19.8, 6.0, 2.0, 1.0)])
    assert host.at == 20.0
    assert host.counters["admitted"]["p"] == 10.0
    assert host.counters["hedges:sent"]["p"] == 2.5  # after dispatch, by event
    assert host.gauges["queue_depth"]["p"] == 3.0
    assert host.gauges["objective"]["p"] == 2.0  # a setting, alike on every worker
    assert host.histograms["ttft"]["p"] == ((0.5, 4.0), (1.0, 6.0), (float("inf"), 8.0))
    assert host.shed["p"][("saturated", "standard")] == 5.0
