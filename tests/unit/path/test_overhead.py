"""The gateway's overhead leaves out the waits it does not spend working: queue wait and
the question's embedding have their own metrics."""

from __future__ import annotations

import pytest

from gateway.openai.request import ParsedRequest
from gateway.path.context import RequestContext
from gateway.path.dispatch import overhead_s
from gateway.policy import load_policy_text
from tests.support.policies import single_pool

POLICY = load_policy_text(single_pool("http://127.0.0.1:1"))


def _ctx(embed_s: float) -> RequestContext:
    request = ParsedRequest("chat", "fast", False, {"model": "fast", "messages": []})
    return RequestContext("r", 10.0, request, POLICY, {}, embed_s=embed_s)


# id -> (now, queued_s, embed_s, overhead)
CASES = {
    "no waits": (10.25, 0.0, 0.0, 0.25),
    "queue wait left out": (13.25, 3.0, 0.0, 0.25),
    "embedding left out": (10.75, 0.0, 0.5, 0.25),
    "both left out": (13.75, 3.0, 0.5, 0.25),
    "never negative (clocks of different grain)": (10.5, 0.75, 0.0, 0.0),
}


@pytest.mark.parametrize(("now", "queued", "embed", "overhead"), CASES.values(), ids=list(CASES))
def test_overhead_leaves_out_queue_wait_and_embedding(
    now: float, queued: float, embed: float, overhead: float
) -> None:
    assert overhead_s(now, _ctx(embed), queued) == pytest.approx(overhead)
