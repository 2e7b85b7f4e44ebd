from __future__ import annotations

import statistics
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from loadtests.loadgen.arrivals import Bounds
from loadtests.loadgen.plan import plan_requests
from loadtests.loadgen.workload import Workload, load_workload
from loadtests.sim.tokenizer import count_tokens

SHIPPED = [
    "sharegpt_like",
    "multitenant_prefix",
    "faq_paraphrase",
    "easy_hard_mix",
    "bursty",
    "tenant_prefix",
    "tenant_prefix_volatile",
]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_workloads_are_deterministic(workloads_dir: Path, name: str) -> None:
    workload = load_workload(workloads_dir / f"{name}.yaml")
    bounds = Bounds(duration_s=20.0)
    first = plan_requests(workload, 7, bounds)
    assert first, name
    assert first == plan_requests(workload, 7, bounds)
    assert first != plan_requests(workload, 8, bounds)
    for request in first:
        body = request.body()
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert body["max_tokens"] >= 1


def _synthetic(prompt: dict[str, object]) -> Workload:
    return Workload.model_validate(
        {
            "name": "t",
            "arrival": {"kind": "poisson", "rate": 100.0},
            "classes": [{"name": "c", "kind": "synthetic", "prompt_tokens": prompt}],
        }
    )


def test_prompt_lengths_follow_lognormal() -> None:
    workload = _synthetic({"kind": "lognormal", "median": 200, "sigma": 0.8, "max": 1000})
    plan = plan_requests(workload, 0, Bounds(max_requests=400))
    lengths = [count_tokens(r.messages[0]["content"]) for r in plan]
    assert min(lengths) >= 1
    assert max(lengths) <= 1000
    assert statistics.median(lengths) == pytest.approx(200, rel=0.15)


def test_fixed_and_empirical_lengths_exact() -> None:
    fixed = plan_requests(_synthetic({"kind": "fixed", "value": 64}), 0, Bounds(max_requests=20))
    assert {count_tokens(r.messages[0]["content"]) for r in fixed} == {64}
    empirical = _synthetic({"kind": "empirical", "values": [10, 300]})
    lengths = {
        count_tokens(r.messages[0]["content"])
        for r in plan_requests(empirical, 0, Bounds(max_requests=50))
    }
    assert lengths == {10, 300}


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate(
            {"name": "t", "arrival": {"kind": "poisson", "rate": 1, "burst": 3}, "classes": []}
        )
    with pytest.raises(ValidationError):
        _synthetic({"kind": "fixed", "value": 3, "typo": 1})


def test_multitenant_prefix_shape(workloads_dir: Path) -> None:
    workload = load_workload(workloads_dir / "multitenant_prefix.yaml")
    plan = plan_requests(workload, 1, Bounds(max_requests=40))
    systems = [r.messages[0]["content"] for r in plan]
    assert all(s.startswith("Current time: 2025-") for s in systems)
    assert len(set(systems)) == len(systems)  # volatile fields differ per request
    bodies = {s.split("\n", 1)[1] for s in systems}
    assert 1 < len(bodies) <= 8  # one static body per tenant
    tokens = [count_tokens(b) for b in bodies]
    assert all(1400 <= t <= 1700 for t in tokens)
    assert all(r.headers["x-gateway-session"].startswith("t") for r in plan)


def test_tenant_prefix_pair_differs_only_by_the_volatile_head(workloads_dir: Path) -> None:
    stable = plan_requests(
        load_workload(workloads_dir / "tenant_prefix.yaml"), 3, Bounds(max_requests=40)
    )
    volatile = plan_requests(
        load_workload(workloads_dir / "tenant_prefix_volatile.yaml"), 3, Bounds(max_requests=40)
    )
    for a, b in zip(stable, volatile, strict=True):
        head, _, body = b.messages[0]["content"].partition("\n")
        assert head.startswith("Current time: ")
        assert body == a.messages[0]["content"]  # same tenant prompt, same order
        assert a.messages[1:] == b.messages[1:]
    systems = {r.messages[0]["content"] for r in stable}
    assert 1 < len(systems) <= 40  # one fixed system prompt per tenant
    assert all(1900 <= count_tokens(s) <= 2100 for s in systems)


def test_faq_repeats_questions_in_paraphrase(workloads_dir: Path) -> None:
    workload = load_workload(workloads_dir / "faq_paraphrase.yaml")
    plan = plan_requests(workload, 1, Bounds(max_requests=300))
    prompts = [r.messages[0]["content"] for r in plan]
    distinct = set(prompts)
    assert len(distinct) < len(prompts) / 2
    assert len(distinct) > 30  # several wordings of the popular questions


def test_easy_hard_labels(workloads_dir: Path) -> None:
    workload = load_workload(workloads_dir / "easy_hard_mix.yaml")
    plan = plan_requests(workload, 1, Bounds(max_requests=400))
    labels = [r.label for r in plan]
    assert labels.count("easy") / len(labels) == pytest.approx(0.7, abs=0.07)
    easy = [count_tokens(r.messages[0]["content"]) for r in plan if r.label == "easy"]
    hard = [count_tokens(r.messages[0]["content"]) for r in plan if r.label == "hard"]
    assert max(easy) < min(hard)


def test_trace_replay_in_time_order(tmp_path: Path) -> None:
    rows = [
        {"t": 2.0, "messages": [{"role": "user", "content": "c"}], "max_tokens": 5},
        {"t": 0.5, "messages": [{"role": "user", "content": "a"}], "model": "smart", "top_p": 1},
        {"t": 0.5, "messages": [{"role": "user", "content": "b"}], "headers": {"x-k": "v"}},
        {"t": 9.0, "messages": [{"role": "user", "content": "late"}]},
    ]
    (tmp_path / "t.jsonl").write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    (tmp_path / "w.yaml").write_text("name: tr\narrival: {kind: trace, path: t.jsonl}\n")
    workload = load_workload(tmp_path / "w.yaml")
    plan = plan_requests(workload, 0, Bounds(duration_s=5.0))
    assert [r.messages[0]["content"] for r in plan] == ["a", "b", "c"]
    assert [r.at_s for r in plan] == [0.5, 0.5, 2.0]
    assert plan[0].model == "smart"
    assert plan[0].body()["top_p"] == 1
    assert plan[1].headers == {"x-k": "v"}
    assert plan[2].max_tokens == 5
