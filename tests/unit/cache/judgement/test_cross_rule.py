"""The cross-encoder's hit rule inside the cache: the best candidate only, refused when late."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from gateway.cache.judgement.cross_rule import CrossCheck, cross_rules, threshold_of
from gateway.cache.judgement.rule_loading import SemanticRules, load_rules
from gateway.cache.judgement.verdict import HitRule
from gateway.cache.response_cache import ResponseCache
from gateway.cache.store.memory_store import MemoryStore
from gateway.embedding import EmbedderSettings, EmbedderSlot
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, SemanticCache
from tests.unit.cache.judgement.test_cross_encoder import tiny_file
from tests.unit.cache.test_response_cache import WordEncoder, _body, _store


class TableScores:
    """Scores from a table of asked questions; None (late) for those not in it."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.asked: list[tuple[str, str]] = []

    async def score(self, cached: str, asked: str, timeout_s: float) -> float | None:
        self.asked.append((cached, asked))
        return self.table.get(asked)


@pytest.mark.parametrize(
    ("p", "reason"), [(0.9, None), (0.5, None), (0.49, "verifier"), (None, "verifier_late")]
)
async def test_the_check_reads_the_probability_against_the_threshold(
    p: float | None, reason: str | None
) -> None:
    table = {} if p is None else {"asked": p}
    check = CrossCheck(TableScores(table), threshold=0.5, timeout_s=0.05)
    assert await check.refusal("cached", "asked") == reason


def test_the_rules_take_the_floor_and_the_bound_from_the_weights() -> None:
    weights = tiny_file()
    settings = SemanticCache(max_false_hit_rate=0.2)
    rule, check = cross_rules(settings, weights, TableScores({}))
    assert (rule.floor, rule.guard, rule.verifier) == (0.7, True, None)
    assert check.threshold == threshold_of(settings, weights) == weights.curve.threshold_for(0.2)
    assert check.timeout_s == settings.cross_encoder.timeout_s


async def _cache(scores: TableScores, metrics: GatewayMetrics) -> ResponseCache:
    slot = EmbedderSlot(EmbedderSettings(), loader=lambda _: WordEncoder())
    slot.start()
    assert await slot.ready()

    async def rules(_: SemanticCache) -> SemanticRules:
        return SemanticRules(HitRule(guard=True, floor=0.5), CrossCheck(scores, 0.5, 0.05))

    store = MemoryStore(ttl_s=60, max_entries=100, clock=lambda: 0.0)
    cache = ResponseCache(Cache(enabled=True), store, slot, metrics, rules=rules)
    await cache.start()
    return cache


@pytest.mark.parametrize(
    ("p", "status", "reason"),
    [(0.9, "semantic", None), (0.1, "miss", "verifier"), (None, "miss", "verifier_late")],
)
async def test_the_cross_encoder_reads_only_the_best_candidate(
    p: float | None, status: str, reason: str | None
) -> None:
    asked = "how reset my password"
    scores = TableScores({} if p is None else {asked: p})
    metrics = GatewayMetrics(CollectorRegistry())
    cache = await _cache(scores, metrics)
    await _store(cache, "How do I reset my password?")
    await _store(cache, "how do I reset password")  # its own lookup was late: stored
    scores.asked.clear()
    found = await cache.lookup("chat", "fast", _body(asked), {})
    assert found.status == status
    assert len(scores.asked) == 1  # two candidates, one read, hit or not
    if reason is not None:
        assert metrics.cache_guard_refusals.labels(reason)._value.get() >= 1
    await cache.close()


async def test_the_guard_refuses_before_the_cross_encoder_is_asked() -> None:
    scores = TableScores({"How do I not reset my password?": 0.99})
    cache = await _cache(scores, GatewayMetrics(CollectorRegistry()))
    await _store(cache, "How do I reset my password?")
    found = await cache.lookup("chat", "fast", _body("How do I not reset my password?"), {})
    assert found.status == "miss"
    assert scores.asked == []
    await cache.close()


async def test_unreadable_cross_encoder_weights_fall_back_to_the_feature_verifier(
    tmp_path: Path,
) -> None:
    settings = SemanticCache(cross_encoder={"path": str(tmp_path / "missing.npz")})
    rules = await load_rules(settings)
    assert rules is not None
    assert rules.check is None
    assert rules.rule.verifier is not None


async def test_the_cross_encoder_rules_load_from_a_weights_file(tmp_path: Path) -> None:
    tiny_file().save(tmp_path / "ce.npz")
    rules = await load_rules(SemanticCache(cross_encoder={"path": str(tmp_path / "ce.npz")}))
    assert rules is not None
    assert rules.check is not None
    assert rules.worker is not None
    assert rules.rule.floor == 0.7
    p = await rules.worker.score("how do I reset my password?", "reset my password", 30)
    assert p is not None
    assert 0 < p < 1
    await rules.close()
