"""What a run's clients saw, judged against an uninterrupted answer (pure).

Expected text: the simulated engine answers a chat with ``tokenizer.generate(chat_prompt(
messages), seed, n)``, ``n = min(max_tokens, natural_length(prompt, seed))`` (``seed`` 0
unless the request sends one; ``ignore_eos`` drops the natural length), whatever replica
serves it; so the text of an uninterrupted run is known for every planned request
(``expected_text``) and each no-fault run checks it (every stream intact).

Each request ends one way (``outcome``):

- ``intact``: status 200, no error, the text equal to the expected one (a stream that ends
  cleanly without ``[DONE]`` but with all its text counts: the text is what matters);
- ``looks_complete``: the stream ended as a complete one does to an SDK user (``[DONE]``, or
  the response ended cleanly without it) but the text is not the expected one:
  ``truncated`` when it is a prefix of it, ``altered`` otherwise;
- ``error_event``: the stream carried an error event (an honest failure);
- ``broken``: the connection broke mid-answer, or the client timed out;
- ``refused``: 429 or 503 (admission); ``failed``: any other status or connection error.

Figures per run (``run_figures``): TTFT p50/p99 at the client over the requests not refused
(one without a first token counts as the client timeout), the counts above, and upstream
requests: generation requests the replicas received (``sim_requests_total``), and the extra
ones over the requests the target passed on (not refused).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.stats import percentile
from loadtests.sim import tokenizer
from loadtests.sim.generation import chat_prompt, natural_length
from loadtests.sim.profile import NaturalStop

Outcome = Literal["intact", "truncated", "altered", "error_event", "broken", "refused", "failed"]
OUTCOMES: tuple[Outcome, ...] = (
    "intact", "truncated", "altered", "error_event", "broken", "refused", "failed",
)  # fmt: skip


def expected_text(request: PlannedRequest, stop: NaturalStop) -> str:
    """The uninterrupted answer of the simulated engine to ``request``."""
    body = request.body()
    prompt = chat_prompt(body["messages"])
    seed = int(body.get("seed") or 0)
    n = int(body["max_tokens"])
    if not body.get("ignore_eos"):
        n = min(n, natural_length(prompt, seed, stop))
    return "".join(tokenizer.generate(prompt, seed, n))


def outcome(record: RequestRecord, expected: str) -> Outcome:
    error = record.error
    if record.shed:
        return "refused"
    if error == "timeout" or (error or "").startswith("broken_stream"):
        return "broken"
    if record.status != 200:
        return "failed"
    text = record.text or ""
    if error is None or error == "truncated":  # [DONE], or a clean end without it
        if text == expected:
            return "intact"
        return "truncated" if expected.startswith(text) else "altered"
    return "error_event"


def outcomes(records: Sequence[RequestRecord], expected: Mapping[int, str]) -> Counter[str]:
    return Counter(outcome(r, expected[r.index]) for r in records)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def run_figures(
    records: Sequence[RequestRecord],
    expected: Mapping[int, str],
    upstream: float | None,
    timeout_s: float,
) -> dict[str, Any]:
    """A run's figures (module docstring); ``upstream`` from the replicas (None: unread)."""
    counts = outcomes(records, expected)
    passed = [r for r in records if not r.shed and r.status is not None]
    ttfts = [r.ttft_s if r.ttft_s is not None else timeout_s for r in passed]
    n = len(records)
    extra = None if upstream is None else upstream - len(passed)
    return {
        "requests": n,
        "passed_on": len(passed),
        "ttft_p50_ms": _ms(percentile(ttfts, 50)),
        "ttft_p99_ms": _ms(percentile(ttfts, 99)),
        "no_first_token": sum(r.ttft_s is None for r in passed),
        **{o: counts.get(o, 0) for o in OUTCOMES},
        "intact_share": counts.get("intact", 0) / n if n else None,
        "looks_complete_not": counts.get("truncated", 0) + counts.get("altered", 0),
        "upstream_requests": upstream,
        "extra_upstream": extra,
        "extra_share": None if extra is None or not passed else extra / len(passed),
        "errors": dict(Counter(r.error for r in records if r.error)),
    }
