"""Semantic-cache quality: public pair data, the verifier's fit, and its evaluation."""
