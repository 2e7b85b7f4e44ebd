"""Discovering backends in the policy: the schema's rules, and the expansion into replicas
(names by slot, URLs by address, the entry's other fields, the DNS name itself while nothing
was found) that the compile step then reads as any policy."""

from __future__ import annotations

import pytest

from gateway.policy import load_policy_text
from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.policy.discovered import Replicas, expand
from gateway.schema.problems import PolicyError

ENTRY = (
    "  - {name: vllm, discover: {dns: vllm.ns.svc.cluster.local, port: 8000%s},"
    " model: m, pool: main, engine: vllm, max_inflight: 8, extra_routes: [tokenize]}\n"
)
POLICY = "backends:\n" + ENTRY % "" + "models:\n  fast: {pool: main}\n"


def _compiled(found: dict[str, Replicas] | None = None, text: str = POLICY) -> CompiledPolicy:
    return compile_policy(load_policy_text(text).source, found=found)


def _replicas(*slots: tuple[int, str], dns: str = "vllm.ns.svc.cluster.local") -> Replicas:
    return Replicas(dns, 8000, tuple(slots))


# id -> (found, expected (name, url) pairs)
CASES = {
    "nothing found: the name itself": (None, [("vllm", "http://vllm.ns.svc.cluster.local:8000")]),
    "no address: the name itself": (
        {"vllm": _replicas()},
        [("vllm", "http://vllm.ns.svc.cluster.local:8000")],
    ),
    "one per address, by slot": (
        {"vllm": _replicas((0, "10.0.0.7"), (2, "10.0.0.9"))},
        [("vllm-0", "http://10.0.0.7:8000"), ("vllm-2", "http://10.0.0.9:8000")],
    ),
    "IPv6 in brackets": (
        {"vllm": _replicas((0, "fd00::5"))},
        [("vllm-0", "http://[fd00::5]:8000")],
    ),
    "found for another name: not used": (
        {"vllm": _replicas((0, "10.0.0.7"), dns="other.svc")},
        [("vllm", "http://vllm.ns.svc.cluster.local:8000")],
    ),
}


@pytest.mark.parametrize(("found", "expected"), CASES.values(), ids=CASES.keys())
def test_expansion(found: dict[str, Replicas] | None, expected: list[tuple[str, str]]) -> None:
    policy = _compiled(found)
    assert [(b.name, b.url) for b in policy.backends] == expected
    for spec in policy.backends:
        assert spec.discovered
        assert (spec.engine, spec.served_model, spec.pool, spec.max_inflight) == (
            "vllm",
            "m",
            "main",
            8,
        )
        assert spec.extra_routes == frozenset({"tokenize"})


def test_listed_backends_pass_through_and_are_not_discovered() -> None:
    text = (
        "backends:\n"
        + ENTRY % ""
        + "  - {name: b, url: 'http://10.1.0.1:8000', model: m, pool: main}\n"
        "models:\n  fast: {pool: main}\n"
    )
    policy = _compiled({"vllm": _replicas((0, "10.0.0.7"))}, text)
    assert [(b.name, b.discovered) for b in policy.backends] == [("vllm-0", True), ("b", False)]


def test_new_replicas_make_a_new_digest_and_keep_the_declared_source() -> None:
    before = _compiled()
    after = _compiled({"vllm": _replicas((0, "10.0.0.7"))})
    assert before.digest != after.digest
    assert after.source == before.source  # as declared: the entry still discovers
    assert after.source.backends[0].discover is not None
    assert _compiled({"vllm": _replicas((0, "10.0.0.7"))}).digest == after.digest


def test_expand_leaves_a_policy_without_discovery_alone() -> None:
    listed = load_policy_text(
        "backends:\n  - {name: b, url: 'http://10.1.0.1:8000', model: m, pool: p}\n"
        "models:\n  fast: {pool: p}\n"
    ).source
    assert expand(listed, {}) == (listed, frozenset())


@pytest.mark.parametrize(
    ("backend", "problem"),
    [
        ("{name: a, model: m, pool: p}", "exactly one of 'url' or 'discover'"),
        (
            "{name: a, url: 'http://x:1', discover: {dns: x, port: 1}, model: m, pool: p}",
            "exactly one of 'url' or 'discover'",
        ),
        ("{name: a, discover: {dns: 'not a name', port: 1}, model: m, pool: p}", "dns"),
        ("{name: a, discover: {dns: x, port: 0}, model: m, pool: p}", "port"),
        (
            "{name: a, discover: {dns: x, port: 1}, tls: {verify: false}, model: m, pool: p}",
            "tls applies to https",
        ),
    ],
)
def test_the_schema_refuses(backend: str, problem: str) -> None:
    with pytest.raises(PolicyError) as error:
        load_policy_text(f"backends:\n  - {backend}\nmodels:\n  fast: {{pool: p}}\n")
    assert problem in error.value.render()


def test_https_discovery_with_tls_compiles() -> None:
    text = (
        "backends:\n  - {name: a, discover: {dns: x.svc, port: 443, scheme: https, path: /v1},"
        " tls: {verify: false}, model: m, pool: p}\nmodels:\n  fast: {pool: p}\n"
    )
    policy = compile_policy(
        load_policy_text(text).source, found={"a": Replicas("x.svc", 443, ((0, "10.0.0.1"),))}
    )
    assert [b.url for b in policy.backends] == ["https://10.0.0.1:443/v1"]
