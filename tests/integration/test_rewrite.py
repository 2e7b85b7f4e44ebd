"""Prompt rewriting and prefix-break explanation through the gateway."""

from __future__ import annotations

import httpx2 as httpx

from loadtests.kit.fake_upstream import FakeLog

CHAT = "/v1/chat/completions"


def _body(stamp: str, request_id: str) -> dict[str, object]:
    system = f"You are the support bot of Acme. Current time: {stamp}. Request id: {request_id}."
    return {
        "model": "fast",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "Where is my order?"},
        ],
    }


def test_volatile_fragments_leave_the_shared_prefix(gateway: str, fake_log: FakeLog) -> None:
    with httpx.Client(base_url=gateway) as http:
        one = http.post(CHAT, json=_body("2026-11-21T10:00:00Z", "req_1a2b3c"))
        two = http.post(CHAT, json=_body("2026-11-21T10:05:09Z", "req_9z8y7x"))
        off = http.post(
            CHAT, json=_body("2026-11-21T10:07:00Z", "req_5"), headers={"x-gateway-rewrite": "off"}
        )
        metrics = http.get("/metrics").text
    assert one.status_code == two.status_code == off.status_code == 200
    sent = [b["messages"][0]["content"] for b in fake_log.bodies]
    stable = [text.split("\n\n[Context:")[0] for text in sent[:2]]
    assert stable[0] == stable[1]
    assert "2026-11-21T10:05:09Z" in sent[1]  # moved, not lost
    assert "req_9z8y7x" in sent[1]
    assert one.headers["x-gateway-rewrite"].startswith("moved=")
    assert sent[2] == _body("2026-11-21T10:07:00Z", "req_5")["messages"][0]["content"]  # type: ignore[index]
    assert 'gateway_rewrite_fragments_total{kind="timestamp"} 2.0' in metrics


def test_prefix_break_is_explained_per_session(gateway: str) -> None:
    session = {"x-gateway-session": "s-1", "x-gateway-rewrite": "off"}
    with httpx.Client(base_url=gateway) as http:
        first = http.post(CHAT, json=_body("2026-11-21T10:00:00Z", "req_a1"), headers=session)
        second = http.post(CHAT, json=_body("2026-11-21T11:30:00Z", "req_a1"), headers=session)
        metrics = http.get("/metrics").text
    assert "x-gateway-prefix-break" not in first.headers
    offset, cause = second.headers["x-gateway-prefix-break"].split("; ")
    assert cause == "cause=timestamp"
    assert int(offset.removeprefix("offset=")) > 5
    assert 'gateway_prefix_break_total{cause="timestamp"} 1.0' in metrics
