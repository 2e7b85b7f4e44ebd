"""Admission through HTTP: queueing with x-gateway-queue-ms, header validation, and a waiter
whose client leaves."""

from __future__ import annotations

import socket

import httpx2 as httpx
import orjson

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool

CHAT = "/v1/chat/completions"
GOOD = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


# Queue mechanics on a cold pool: an objective loose enough that waiting for one slot meets it
# (the default 2 s would refuse the waiter at once: nothing has completed to show the wait is
# short; tests/unit/admission/test_slo.py covers that).
LOOSE = "pools:\n  small: {admission: {objective: {ttft_s: 30}}}\n"


def test_a_queued_request_is_served_when_a_slot_frees(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    with (
        start_gateway(single_pool(upstream, inflight=1, extra=LOOSE)) as url,
        httpx.Client(base_url=url, timeout=10) as http,
    ):
        slow = {**GOOD, "stream": True, "fake": {"tokens": 3, "itl_s": 0.2}}
        with http.stream("POST", CHAT, json=slow) as first:
            assert first.headers["x-gateway-queue-ms"] == "0"
            lines = first.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            with httpx.Client(base_url=url, timeout=10) as other:
                second = other.post(CHAT, json=GOOD)
            list(lines)
        metrics = http.get("/metrics").text
    assert second.status_code == 200
    assert int(second.headers["x-gateway-queue-ms"]) > 0
    assert "gateway_queue_wait_seconds_count" in metrics
    assert 'gateway_concurrency_limit{pool="small"} 1.0' in metrics


def test_bad_priority_and_deadline_headers_are_400(gateway: str) -> None:
    with httpx.Client(base_url=gateway) as http:
        bad = http.post(CHAT, json=GOOD, headers={"x-gateway-priority": "urgent"})
        assert bad.status_code == 400
        assert bad.json()["error"]["param"] == "x-gateway-priority"
        bad = http.post(CHAT, json=GOOD, headers={"x-gateway-deadline-ms": "-5"})
        assert bad.status_code == 400
        ok = http.post(
            CHAT,
            json=GOOD,
            headers={"x-gateway-priority": "critical", "x-gateway-deadline-ms": "5000"},
        )
        assert ok.status_code == 200


def test_a_waiter_whose_client_leaves_leaves_the_queue(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    with (
        start_gateway(single_pool(upstream, inflight=1, extra=LOOSE)) as url,
        httpx.Client(base_url=url, timeout=10) as http,
    ):
        slow = {**GOOD, "stream": True, "fake": {"tokens": 2, "itl_s": 0.5}}
        with http.stream("POST", CHAT, json=slow) as first:
            assert first.status_code == 200
            host, port = url.removeprefix("http://").split(":")
            payload = orjson.dumps(GOOD)
            with socket.create_connection((host, int(port))) as sock:
                head = f"POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(payload)}\r\n\r\n"
                sock.sendall(head.encode() + payload)
                depth = ""
                while (
                    'gateway_queue_depth{lane="short",pool="small",priority="standard"} 1.0'
                    not in depth
                ):
                    depth = http.get("/metrics").text
            list(first.iter_lines())
        metrics = ""
        while 'gateway_cancellations_total{phase="queued"} 1.0' not in metrics:
            metrics = http.get("/metrics").text
        assert 'gateway_queue_depth{lane="short",pool="small",priority="standard"} 0.0' in metrics
