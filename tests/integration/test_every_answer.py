"""Every answer carries ``x-gateway-request-id`` and is in ``gateway_requests_total`` by its
status: served, refused by admission (503), client errors (400, 404, 405) and unknown paths
alike, so an error rate is one metric; operations routes (probes, scrapes) get an id but are
not counted."""

from __future__ import annotations

import re

import httpx2 as httpx
from starlette.requests import Request
from starlette.responses import Response

from gateway.app import build_app
from gateway.policy import load_policy_text
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.servers import serve

CHAT = "/v1/chat/completions"
GOOD = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
SAMPLE = re.compile(r"^gateway_requests_total\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$", re.M)


def counted(metrics: str) -> dict[str, float]:
    """status -> requests counted, summed over the other labels."""
    by_status: dict[str, float] = {}
    for match in SAMPLE.finditer(metrics):
        status = re.search(r'status="(\d+|other)"', match["labels"])
        assert status is not None
        by_status[status[1]] = by_status.get(status[1], 0.0) + float(match["value"])
    return by_status


def test_every_answer_has_an_id_and_client_answers_are_counted_once(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    with (
        start_gateway(single_pool(upstream, inflight=1)) as url,
        httpx.Client(base_url=url, timeout=10) as http,
    ):
        slow = {**GOOD, "stream": True, "fake": {"tokens": 3, "itl_s": 0.3}}
        with http.stream("POST", CHAT, json=slow) as first:
            assert first.status_code == 200
            # One slot, taken, on a cold pool (nothing finished yet to show how long a slot
            # is held): the default 2 s objective refuses at once.
            with httpx.Client(base_url=url, timeout=10) as other:
                refused = other.post(CHAT, json=GOOD)
            list(first.iter_bytes())
        answers = [
            refused,  # 503
            http.post(CHAT, json=GOOD),  # 200
            http.post(CHAT, json={**GOOD, "model": "nope"}),  # 404 model_not_found
            http.post(CHAT, content=b"{not json", headers={"content-type": "application/json"}),
            http.get("/v1/nothing-here"),  # 404 unknown_url
            http.get(CHAT),  # 405
            http.get("/v1/models"),  # 200, not through the request path
        ]
        operations = [http.get(p) for p in ("/healthz", "/health", "/ping", "/version")]
        metrics = http.get("/metrics").text
    statuses = [a.status_code for a in answers]
    assert statuses == [503, 200, 404, 400, 404, 405, 200]
    refusal = refused.json()["error"]
    assert refusal["code"] == "objective_unmeetable"
    # The numbers add up: the prediction from arrival, the objective, the time spent.
    assert re.fullmatch(
        r"Pool 'small' cannot serve this request in time: predicted first token at \d+\.\d+ s, "
        r"past the 2\.0 s objective; \d+\.\d s already spent here\.",
        refusal["message"],
    ), refusal["message"]
    ids = [a.headers.get("x-gateway-request-id") for a in [*answers, *operations]]
    assert all(ids), ids
    assert len(set(ids)) == len(ids), ids
    # The streamed request is a 200 too; the probes are not client traffic.
    assert counted(metrics) == {"200": 3.0, "400": 1.0, "404": 2.0, "405": 1.0, "503": 1.0}
    shed = 'gateway_requests_total{backend="none",cache="bypass",model="fast",pool="small",'
    assert shed + 'status="503"} 1.0' in metrics  # the refusal names the pool that refused


def test_vllm_probe_and_version_routes(gateway: str) -> None:
    with httpx.Client(base_url=gateway) as http:
        health, ping, version = http.get("/health"), http.get("/ping"), http.get("/version")
    assert health.status_code == ping.status_code == 200
    assert health.json()["status"] == "ready"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version.json()["version"])


def test_a_bug_of_ours_is_a_counted_500_with_an_id(upstream: str) -> None:
    app = build_app(load_policy_text(single_pool(upstream)))

    async def broken(request: Request) -> Response:
        raise RuntimeError("a bug")

    app.add_route("/v1/broken", broken, methods=["GET"])
    with serve(app) as url:
        # uvicorn closes the connection after an exception: a new one for the next request.
        answer = httpx.get(url + "/v1/broken")
        metrics = httpx.get(url + "/metrics").text
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "internal_error"
    assert answer.headers["x-gateway-request-id"]
    assert counted(metrics) == {"500": 1.0}
