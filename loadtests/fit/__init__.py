"""The fitting commands: each fits parameters the gateway ships (weights files, defaults).

``router_weights`` (the difficulty model), ``cache_verifier`` (the semantic cache's feature
verifier), ``cross_encoder`` (its cross-encoder verifier), ``token_estimate`` (the token
estimate's coefficients). Fitted on training data only.
"""
