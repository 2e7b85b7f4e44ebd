"""Fit the semantic cache's feature verifier (``gateway/cache/judgement/verifier.npz``) on the
QQP train split."""
