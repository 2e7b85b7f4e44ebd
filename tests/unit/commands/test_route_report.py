"""`latency-gateway route` and `fit-router`: the plan stage on JSON lines, and fitting."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.features import FEATURE_NAMES
from gateway.classify.model import DifficultyModel, Success, load_model
from gateway.commands.cli import main
from gateway.commands.route_report import DryRun, needs_encoder
from gateway.embedding import Vectors
from gateway.policy import load_policy_text
from tests.support.policies import SMALL_LARGE

POLICY = SMALL_LARGE + "pools:\n  small: {max_context: 2000}\nrouting:\n  default_pool: small\n"
# The cue-word heuristic scores, not the default learned model: what looks hard goes large.
HEURISTIC = POLICY + "classify: {model: {enabled: false}}\n"
EASY = "Translate 'good morning' into French."
HARD = (
    "Prove that the sum of the reciprocals of the primes diverges, derive each inequality "
    "step by step and explain why the bound holds; the proof must be rigorous."
)


class HashEncoder:
    """Deterministic unit vectors from the text's hash (no model needed)."""

    def __init__(self, dim: int) -> None:
        self._dim = dim
        self.calls: list[str] = []

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.calls += texts
        rows = []
        for text in texts:
            seed = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
            v = np.random.default_rng(seed).standard_normal(self._dim)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32)


def _line(content: str, **extra: object) -> str:
    return json.dumps({"messages": [{"role": "user", "content": content}], **extra})


def test_lines_are_planned_as_the_gateway_would() -> None:
    dry = DryRun(load_policy_text(HEURISTIC))
    easy, hard, fixed, completion = dry.lines(
        [
            _line(EASY),
            _line(HARD),
            "",  # blank lines are skipped
            _line(HARD, model="fixed"),
            json.dumps({"prompt": EASY, "max_tokens": 5}),
        ]
    )
    assert easy["pool"] == "small"
    assert easy["length"] == "short"
    assert easy["reason"].startswith("auto:small<")
    assert 0.0 <= easy["score"] < hard["score"] <= 1.0
    assert hard["pool"] == "large"
    assert hard["reason"].startswith("auto:large>=")
    assert fixed["pool"] == "small"
    assert fixed["reason"] == "model:fixed"
    assert completion["pool"] == "small"
    assert isinstance(completion["prompt_tokens"], int)


def test_by_default_the_learned_text_model_scores_without_an_encoder() -> None:
    policy = load_policy_text(POLICY)
    assert not needs_encoder(policy)  # the bundled model reads words, not embeddings
    out = DryRun(policy).decide(_line(HARD))
    assert out["reason"].endswith(";by=model")
    assert (out["pool"] == "large") == (out["score"] >= 0.7)  # the top 30% of its prompts


@pytest.mark.parametrize(
    ("line", "status", "code"),
    [
        ("{not json", 400, None),
        (_line("hi", model="nope"), 404, "model_not_found"),
        (_line("word " * 3000, model="fixed"), 400, "context_length_exceeded"),
        (json.dumps({"messages": "not a list"}), 400, "invalid_value"),
    ],
)
def test_refusals_come_back_as_the_gateway_answers_them(
    line: str, status: int, code: str | None
) -> None:
    out = DryRun(load_policy_text(POLICY)).decide(line)
    assert out["status"] == status
    assert out["error"]["code"] == code
    assert out["error"]["message"]


def test_a_line_without_model_needs_one_when_the_policy_has_several_auto_models() -> None:
    policy = load_policy_text(POLICY.replace("  fixed: {pool: small}", "  other: {route: auto}"))
    assert "No model" in DryRun(policy).decide(_line(EASY))["error"]["message"]
    assert DryRun(policy, model="other").decide(_line(EASY))["pool"] == "small"


def _toy_weights(path: Path, dim: int) -> Path:
    zeros = np.zeros(len(FEATURE_NAMES))
    direction = np.zeros(dim)
    direction[0] = -40.0  # the small model fails when the vector leans along e0
    model = DifficultyModel(
        Success(4.0, np.zeros(dim), zeros),
        Success(0.0, direction, zeros),
        tuple(-1 + i / 50 for i in range(101)),
        tuple(i / 100 for i in range(101)),
    )
    path.write_text(json.dumps(model.to_json()))
    return path


def test_with_the_learned_model_the_embedding_decides(tmp_path: Path) -> None:
    weights = _toy_weights(tmp_path / "w.json", 8)
    policy = load_policy_text(
        POLICY + f"classify: {{model: {{enabled: true, weights: {weights}}}}}\n"
    )
    assert needs_encoder(policy)
    assert not needs_encoder(load_policy_text(POLICY))
    encoder = HashEncoder(8)
    dry = DryRun(policy, encoder=encoder)
    outs = [dry.decide(_line(f"question {i}")) for i in range(40)]
    assert {o["reason"].rsplit(";", 1)[1] for o in outs} == {"by=model"}
    # The toy model's gain follows the vector's first component: so does the pool.
    for i, out in enumerate(outs):
        lean = encoder.encode([f"question {i}"])[0][0]
        assert (out["pool"] == "large") == (out["score"] >= 0.7)
        if abs(lean) > 0.1:
            assert (out["pool"] == "large") == (lean > 0)
    assert "large" in {o["pool"] for o in outs}
    assert "small" in {o["pool"] for o in outs}


def test_route_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(HEURISTIC)
    monkeypatch.setattr("sys.stdin", io.StringIO(_line(EASY) + "\n" + _line(HARD) + "\n"))
    assert main(["route", "--policy", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["pool"] for line in lines] == ["small", "large"]
    assert set(lines[0]) == {"pool", "score", "length", "prompt_tokens", "reason"}
    (tmp_path / "bad.yaml").write_text("models: {}")
    assert main(["route", "--policy", str(tmp_path / "bad.yaml")]) == 1


def test_fit_router_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("gateway.commands.cli._encoder", lambda path: HashEncoder(384))
    data = tmp_path / "outcomes.jsonl"
    rng = np.random.default_rng(0)
    rows = [
        {"prompt": f"question {i}", "weak_ok": bool(rng.random() < 0.6), "strong_ok": True}
        for i in range(60)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "model.json"
    assert main(["fit-router", str(data), "--out", str(out), "--folds", "2"]) == 0
    model = load_model(out)
    assert model.dim == 384
    assert "fit-router" in model.about
    assert "cross-validated APGR" in capsys.readouterr().err
    data.write_text('{"prompt": "x", "weak_ok": 1}\n')
    assert main(["fit-router", str(data)]) == 1
    assert ":1: 'weak_ok' and 'strong_ok'" in capsys.readouterr().err
