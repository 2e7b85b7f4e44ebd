"""Fit the semantic-cache verifier (``gateway/cache/verifier.npz``) on the QQP train split."""
