"""Azure trace loading, heads, time-scaling and the planned requests built from it (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtests.sim.generation import chat_prompt
from loadtests.sim.tokenizer import count_tokens
from loadtests.slo.azure import (
    TraceRow,
    first,
    mean_rate,
    parse_trace,
    time_scaled,
    trace_path,
    trace_requests,
)

CSV = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:16:51.2224670,879,55
2023-11-16 18:17:46.6805900,91,16
"""


def _rows(*times: float) -> list[TraceRow]:
    return [TraceRow(t, 100, 10) for t in times]


def test_parse_sorts_by_time_and_keeps_seven_digit_fractions() -> None:
    rows = parse_trace(CSV)
    assert [(r.context_tokens, r.generated_tokens) for r in rows] == [
        (374, 44), (396, 109), (879, 55), (91, 16),
    ]  # fmt: skip
    # 7 fractional digits: more than datetime reads, kept to the microsecond here
    assert [r.at_s for r in rows] == pytest.approx([0.0, 4.314579, 64.541877, 120.0], abs=1e-6)


@pytest.mark.parametrize(
    ("minutes", "requests", "kept"),
    [
        (None, None, 4),
        (1.0, None, 2),  # 64.5 s is past the first minute
        (None, 3, 3),
        (2.5, 1, 1),
        (0.001, None, 1),  # the first arrival is at 0
    ],
)
def test_first_takes_the_head_within_both_bounds(
    minutes: float | None, requests: int | None, kept: int
) -> None:
    assert len(first(parse_trace(CSV), minutes, requests)) == kept


@pytest.mark.parametrize(
    ("times", "rate"),
    [((0.0, 1.0, 2.0), 1.0), ((10.0, 12.0, 13.0, 16.0), 0.5), ((0.0, 0.25), 4.0)],
)
def test_mean_rate_is_gaps_over_span(times: tuple[float, ...], rate: float) -> None:
    assert mean_rate(_rows(*times)) == pytest.approx(rate)


@pytest.mark.parametrize("times", [(), (5.0,), (3.0, 3.0)])
def test_mean_rate_needs_two_distinct_arrivals(times: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="two arrivals"):
        mean_rate(_rows(*times))


@pytest.mark.parametrize(
    ("times", "target", "scaled"),
    [
        ((0.0, 1.0, 2.0), 2.0, (0.0, 0.5, 1.0)),  # 1 req/s -> 2 req/s: half the gaps
        ((10.0, 11.0, 13.0), 0.5, (0.0, 4 / 3, 4.0)),  # starts at 0, gaps keep their shape
        ((0.0, 4.0, 5.0, 6.0), 1.5, (0.0, 4 / 3, 5 / 3, 2.0)),
    ],
)
def test_time_scaling_reaches_the_rate_and_keeps_the_shape(
    times: tuple[float, ...], target: float, scaled: tuple[float, ...]
) -> None:
    out = time_scaled(_rows(*times), target)
    assert [r.at_s for r in out] == pytest.approx(scaled)
    assert mean_rate(out) == pytest.approx(target)


def test_time_scaling_refuses_a_rate_of_zero() -> None:
    with pytest.raises(ValueError, match="positive"):
        time_scaled(_rows(0.0, 1.0), 0.0)


@pytest.mark.parametrize(
    ("context", "generated", "max_len", "prompt", "clipped"),
    [
        (374, 44, 16384, 374, 0),
        (2000, 1, 16384, 2000, 0),
        (14050, 500, 8192, 7692, 1),  # cut so prompt + output fit the window
        (3, 0, 16384, None, 0),  # shorter than the template: one content token, 1 output
    ],
)
def test_trace_requests_match_the_token_counts(
    context: int, generated: int, max_len: int, prompt: int | None, clipped: int
) -> None:
    (req,), cut = trace_requests([TraceRow(1.5, context, generated)], "m", 0, max_len, "conv")
    tokens = count_tokens(chat_prompt(req.messages))
    if prompt is not None:
        assert tokens == prompt
    assert req.max_tokens == max(1, generated)
    assert req.extra == {"ignore_eos": True}
    assert (req.at_s, req.model, req.label) == (1.5, "m", "conv")
    assert cut.requests == clipped
    assert cut.tokens == (context - tokens if clipped else 0)


def test_trace_requests_are_deterministic_per_seed() -> None:
    rows = [TraceRow(0.0, 300, 5), TraceRow(1.0, 300, 5)]
    a, _ = trace_requests(rows, "m", 1, 4096, "code")
    b, _ = trace_requests(rows, "m", 1, 4096, "code")
    c, _ = trace_requests(rows, "m", 2, 4096, "code")
    assert a == b
    assert a[0].messages != c[0].messages
    assert a[0].messages != a[1].messages


def test_trace_path_names_the_csv() -> None:
    root = Path("/data")
    assert trace_path(root, "conv") == Path("/data/azure-llm-2023/conv.csv")
    with pytest.raises(ValueError, match="unknown trace"):
        trace_path(root, "chat")
