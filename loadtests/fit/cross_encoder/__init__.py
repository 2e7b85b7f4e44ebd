"""Fit the cross-encoder verifier (``gateway/cache/judgement/cross_encoder.npz``) on the QQP
train split and the written training pairs."""
