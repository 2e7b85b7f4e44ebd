"""Row metrics from client records: goodput in objective, shedding, refusals, retries (pure)."""

from __future__ import annotations

import pytest

from loadtests.loadgen.record import RequestRecord
from loadtests.slo.objective import ttft_deadline_s, ttft_objective_s
from loadtests.slo.prom import histogram_buckets, histogram_quantile
from loadtests.slo.rows import advised_delay_s, excess_share, refusal_split, row_metrics


@pytest.mark.parametrize(
    ("tokens", "objective"),
    [(0, 2.0), (200, 2.0), (2000, 2.0), (2500, 2.5), (4000, 4.0), (14050, 14.05)],
)
def test_objective_mirrors_the_gateway_default(tokens: int, objective: float) -> None:
    assert ttft_objective_s(tokens) == pytest.approx(objective)


@pytest.mark.parametrize(
    ("multiple", "excess"), [(None, None), (0.5, 0.0), (1.0, 0.0), (2.0, 0.5), (4.0, 0.75)]
)
def test_excess_share(multiple: float | None, excess: float | None) -> None:
    assert excess_share(multiple) == (None if excess is None else pytest.approx(excess))


def _rec(i: int, status: int | None = 200, ttft: float | None = 0.5, e2e: float = 3.0,
         error: str | None = None, retry_after: str | None = None) -> RequestRecord:  # fmt: skip
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return RequestRecord(index=i, label="x", target="t", scheduled_s=float(i), sent_s=float(i),
                         ttft_s=ttft, e2e_s=e2e, status=status, error=error,
                         headers=headers)  # fmt: skip


@pytest.mark.parametrize(
    ("record", "delay"),
    [
        (_rec(0, 503, None, 0.01, "http_503", "3"), 3.0),
        (_rec(0, 429, None, 0.01, "http_429", "0.5"), 0.5),
        (_rec(0, 503, None, 0.01, "http_503"), None),  # no advice
        (_rec(0, 503, None, 0.01, "http_503", "Wed, 21 Oct 2015 07:28:00 GMT"), None),
        (_rec(0, 503, None, 0.01, "http_503", "-1"), None),
        (_rec(0, 200, 0.2, 1.0, None, "3"), None),  # not a refusal
        (_rec(0, 500, None, 0.01, "http_500", "3"), None),
    ],
)
def test_advised_delay(record: RequestRecord, delay: float | None) -> None:
    assert advised_delay_s(record) == delay


METRICS = """# HELP gateway_ttft_prediction_error_seconds x
# TYPE gateway_ttft_prediction_error_seconds histogram
gateway_ttft_prediction_error_seconds_bucket{direction="over",le="0.1",pool="p"} 2.0
gateway_ttft_prediction_error_seconds_bucket{direction="over",le="0.5",pool="p"} 4.0
gateway_ttft_prediction_error_seconds_bucket{direction="over",le="+Inf",pool="p"} 4.0
gateway_ttft_prediction_error_seconds_bucket{direction="under",le="0.1",pool="p"} 2.0
gateway_ttft_prediction_error_seconds_bucket{direction="under",le="0.5",pool="p"} 4.0
gateway_ttft_prediction_error_seconds_bucket{direction="under",le="+Inf",pool="p"} 6.0
gateway_ttft_prediction_error_seconds_count{direction="under",pool="p"} 6.0
gateway_ttft_prediction_error_seconds_total_bucket{le="0.1"} 99.0
"""


def test_histogram_buckets_sum_every_series() -> None:
    assert histogram_buckets(METRICS, "gateway_ttft_prediction_error_seconds") == [
        (0.1, 4.0), (0.5, 8.0), (float("inf"), 10.0),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("q", "value"),
    [
        (0.0, 0.0),
        (0.2, 0.05),  # rank 2 of 4 in [0, 0.1]
        (0.5, 0.2),  # rank 5: 1 of 4 into (0.1, 0.5]
        (0.8, 0.5),
        (0.9, 0.5),  # in +Inf: the highest finite bound
    ],
)
def test_histogram_quantile_like_prometheus(q: float, value: float) -> None:
    buckets = histogram_buckets(METRICS, "gateway_ttft_prediction_error_seconds")
    assert histogram_quantile(q, buckets) == pytest.approx(value)


@pytest.mark.parametrize("buckets", [[], [(0.1, 0.0), (float("inf"), 0.0)]])
def test_histogram_quantile_without_observations(buckets: list[tuple[float, float]]) -> None:
    assert histogram_quantile(0.5, buckets) is None


TOKENS = {i: 100 for i in range(10)} | {9: 4000}  # request 9's objective is 4 s


def test_row_metrics_of_a_mixed_run() -> None:
    records = [
        _rec(0, ttft=0.5), _rec(1, ttft=1.9), _rec(2, ttft=2.5),  # one late
        _rec(3, 503, None, 0.004, "http_503", "2"), _rec(4, 503, None, 0.012, "http_503", "90"),
        _rec(5, 429, None, 0.008, "http_429"),
        _rec(6, None, None, 30.0, "timeout"), _rec(7, 200, None, 1.0, "truncated"),
        _rec(8, 500, None, 0.1, "http_500"), _rec(9, ttft=3.5),  # 3.5 s within its 4 s
    ]  # fmt: skip
    retries = {3: _rec(3, ttft=0.4)}  # the 90 s advice was beyond the client's cap
    row = row_metrics(records, TOKENS, multiple=2.0, window_s=5.0, retries=retries,
                      metrics_text=METRICS)  # fmt: skip
    assert (row["sent"], row["served"], row["good"]) == (10, 4, 3)
    assert row["goodput"] == pytest.approx(0.3)
    assert row["good_rps"] == pytest.approx(0.6)
    assert row["ttft_p50_ms"] == pytest.approx(2200.0)
    assert row["ttft_over_objective_p99"] == pytest.approx(1.25, rel=0.02)  # 2.5 s of 2 s
    assert row["shed"] == pytest.approx(0.3)
    assert row["shed_beyond_excess"] == pytest.approx(-0.2)
    assert row["timeouts"] == 1
    assert row["errors"] == {"truncated": 1, "http_500": 1}
    assert row["refusal_p99_ms"] == pytest.approx(11.92)
    # served in objective + 1 s: 0, 1, 2, 9; refused in time: 3, 4, 5
    assert row["answered_in_time"] == pytest.approx(0.7)
    assert row["retry"] == {"advised": 2, "retried": 1, "admitted": 1}
    assert row["predictor_error_p50_ms"] == pytest.approx(200.0)
    assert row["predictor_error_p90_ms"] == pytest.approx(500.0)


def test_row_metrics_without_refusals_retries_or_metrics() -> None:
    row = row_metrics([_rec(0), _rec(1, ttft=2.0)], TOKENS, multiple=None, window_s=0.0)
    assert row["goodput"] == 1.0
    assert row["good_rps"] is None
    assert row["shed"] == 0.0
    assert row["shed_beyond_excess"] is None
    assert row["refusal_p99_ms"] is None
    assert row["retry"] is None
    assert (row["predictor_error_p50_ms"], row["predictor_error_p90_ms"]) == (None, None)


def test_row_metrics_without_the_prediction_histogram() -> None:
    row = row_metrics([_rec(0)], TOKENS, multiple=1.0, window_s=1.0,
                      metrics_text="gateway_requests_total 3.0\n")  # fmt: skip
    assert row["predictor_error_p50_ms"] is None


def _refusal(i: int, e2e: float, queued_ms: str | None) -> RequestRecord:
    record = _rec(i, 503, None, e2e, "http_503", "2")
    if queued_ms is not None:
        record.headers["x-gateway-queue-ms"] = queued_ms
    return record


@pytest.mark.parametrize(
    ("refusals", "at_arrival_p99_ms", "after_wait"),
    [
        ([], None, None),
        ([_refusal(0, 0.004, None)], None, None),  # a peer: it does not say
        ([_refusal(0, 0.004, "0"), _refusal(1, 0.006, "0")], 5.98, 0),
        ([_refusal(0, 0.004, "0"), _refusal(1, 1.2, "1180")], 4.0, 1),  # the late one apart
        ([_refusal(0, 0.9, "880"), _refusal(1, 0.004, "junk")], None, 1),
    ],
)  # fmt: skip
def test_refusals_at_arrival_apart_from_those_after_a_wait(
    refusals: list[RequestRecord], at_arrival_p99_ms: float | None, after_wait: int | None
) -> None:
    split = refusal_split(refusals)
    assert split["refusals_after_wait"] == after_wait
    if at_arrival_p99_ms is None:
        assert split["refusal_at_arrival_p99_ms"] is None
    else:
        assert split["refusal_at_arrival_p99_ms"] == pytest.approx(at_arrival_p99_ms)


def test_refusals_after_a_wait_judged_against_their_deadline() -> None:
    refusals = [_refusal(0, 0.004, "0"), _refusal(1, 0.005, "0"), _refusal(2, 5.0, "4900"),
                _refusal(3, 6.5, "6400")]  # fmt: skip
    split = refusal_split(refusals, {0: 6.0, 1: 6.0, 2: 6.0, 3: 6.0})
    assert split["refusals_after_wait"] == 2
    assert split["refusals_after_wait_late"] == 1  # 6.5 s past its 6 s deadline
    assert split["refusal_after_wait_worst"] == pytest.approx(6.5 / 6.0)
    assert split["refusal_at_arrival_p95_ms"] == pytest.approx(4.95)
    assert refusal_split(refusals)["refusals_after_wait_late"] is None  # no deadlines given


def test_row_metrics_over_the_deadline_and_refusal_p95() -> None:
    records = [_rec(0, ttft=0.5), _rec(9, ttft=6.0), _refusal(1, 0.01, "0"),
               _refusal(2, 0.03, "0"), _refusal(3, 7.0, "6990")]  # fmt: skip
    row = row_metrics(records, TOKENS, multiple=3.0, window_s=1.0)
    assert row["ttft_over_deadline_p99"] == pytest.approx(row["ttft_over_objective_p99"] / 3)
    assert row["ttft_over_objective_p99"] == pytest.approx(1.4875)  # 6 s of 4 s at p99
    assert row["refusal_p95_ms"] == pytest.approx(6303.0)
    assert row["refusals_after_wait_late"] == 1  # 7 s past 3 x 2 s
    assert row["refusal_after_wait_worst"] == pytest.approx(7.0 / 6.0)


@pytest.mark.parametrize(("tokens", "deadline"), [(0, 6.0), (2000, 6.0), (4000, 12.0)])
def test_deadline_is_three_times_the_objective(tokens: int, deadline: float) -> None:
    assert ttft_deadline_s(tokens) == pytest.approx(deadline)
