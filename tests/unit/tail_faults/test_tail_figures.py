"""How a run's requests are judged against the uninterrupted answer, and its figures."""

from __future__ import annotations

import pytest

from loadtests.loadgen.record import RequestRecord
from loadtests.sim import tokenizer
from loadtests.sim.generation import chat_prompt, natural_length
from loadtests.sim.profile import NaturalStop
from loadtests.tail_faults.figures import expected_text, outcome, run_figures
from loadtests.tail_faults.scenarios import chat_plan

EXPECTED = " the model. cache"


def _record(status: int | None = 200, error: str | None = None, text: str | None = EXPECTED,
            ttft_s: float | None = 0.1, index: int = 0) -> RequestRecord:  # fmt: skip
    return RequestRecord(index=index, label="chat", target="t", scheduled_s=0.0, status=status,
                         error=error, text=text, ttft_s=ttft_s)  # fmt: skip


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (_record(), "intact"),
        (_record(error="truncated"), "intact"),  # all the text, no [DONE]: the text counts
        (_record(text=" the model"), "truncated"),
        (_record(error="truncated", text=" the"), "truncated"),
        (_record(text=" the model. queue"), "altered"),
        (_record(text=EXPECTED + " more"), "altered"),
        (_record(error="upstream_error", text=" the"), "error_event"),
        (_record(error="error_event", text=EXPECTED), "error_event"),
        (_record(error="broken_stream:RemoteProtocolError", text=" the"), "broken"),
        (_record(status=None, error="timeout", text=None), "broken"),
        (_record(error="timeout", text=" the"), "broken"),
        (_record(status=429, error="http_429:overloaded", text=None), "refused"),
        (_record(status=503, error="http_503:queue_full", text=None), "refused"),
        (_record(status=504, error="http_504", text=None), "failed"),
        (_record(status=None, error="connect", text=None), "failed"),
    ],
)
def test_outcome(record: RequestRecord, expected: str) -> None:
    assert outcome(record, EXPECTED) == expected


def test_expected_text_is_the_engines_answer() -> None:
    stop = NaturalStop(min_tokens=16, max_tokens=512)
    for request in chat_plan(8.0, 0, requests=20):
        prompt = chat_prompt(request.messages)
        n = min(request.max_tokens, natural_length(prompt, 0, stop))
        assert expected_text(request, stop) == "".join(tokenizer.generate(prompt, 0, n))
    capped = NaturalStop(min_tokens=2, max_tokens=2)
    (one,) = chat_plan(8.0, 0, requests=1)
    two = tokenizer.generate(chat_prompt(one.messages), 0, 2)
    assert expected_text(one, capped) == "".join(two)


def test_run_figures_count_extra_upstream_over_the_requests_passed_on() -> None:
    records = [
        _record(index=0, ttft_s=0.010),
        _record(index=1, ttft_s=0.020, text=" the"),
        _record(index=2, status=429, error="http_429", text=None, ttft_s=None),
        _record(index=3, status=None, error="timeout", text=None, ttft_s=None),
    ]
    figures = run_figures(records, dict.fromkeys(range(4), EXPECTED), upstream=5, timeout_s=30)
    assert (figures["requests"], figures["passed_on"]) == (4, 2)  # no status: never passed on
    assert (figures["intact"], figures["truncated"], figures["refused"], figures["broken"]) == (
        1, 1, 1, 1)  # fmt: skip
    assert figures["looks_complete_not"] == 1
    assert (figures["extra_upstream"], figures["extra_share"]) == (3, 1.5)
    assert figures["ttft_p50_ms"] == 15.0
    unread = run_figures(records, dict.fromkeys(range(4), EXPECTED), upstream=None, timeout_s=30)
    assert unread["extra_upstream"] is None
