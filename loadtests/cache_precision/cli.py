"""``python -m loadtests.cache_precision``: the semantic cache's match decision on the
hand-labelled pairs (``scoring.py``).

Prints precision and recall per threshold of the old rule (cosine of the real embeddings at
or above the threshold, then the guard), with and without the guard, the verifier's figures
at its default, the verifier's false hits, the false hits of the old rule at its old default
threshold 0.92 and the paraphrases the guard refuses.
"""

from __future__ import annotations

from gateway.embedding import SentenceEncoder
from gateway.schema import SemanticCache
from loadtests.cache_precision.scoring import OLD_THRESHOLD, measure, measure_verifier, score


def main() -> None:
    scored = score(SentenceEncoder())
    default = OLD_THRESHOLD
    print(f"{len(scored)} pairs: {sum(s.positive for s in scored)} paraphrases")
    print("threshold | guard: precision recall false-hits | no guard: precision recall")
    for t in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.96):
        g, n = measure(scored, t), measure(scored, t, guard=False)
        print(
            f"{t:.2f} | {g.precision:.3f} {g.recall:.3f} {g.false_hits:3d} | "
            f"{n.precision:.3f} {n.recall:.3f}"
        )
    v = measure_verifier(scored)
    print(
        f"verifier at max_false_hit_rate {SemanticCache().max_false_hit_rate}: precision "
        f"{v.precision:.3f} recall {v.recall:.3f} false hits {v.false_hits}"
    )
    for s in scored:
        if s.verified and not s.positive:
            print(f"  verifier false hit, {s.kind}: {s.cosine:.3f} {s.a!r} ~ {s.b!r}")
    print(f"false hits of the old rule at {default}:")
    for s in scored:
        if s.hit(default) and not s.positive:
            print(f"  {s.kind}: {s.cosine:.3f} {s.a!r} ~ {s.b!r}")
    print("paraphrases refused by the guard:")
    for s in scored:
        if s.positive and s.refused and s.cosine >= default:
            print(f"  {s.refused}: {s.a!r} ~ {s.b!r}")
