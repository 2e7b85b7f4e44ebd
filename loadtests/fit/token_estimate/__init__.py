"""Fit the token estimate's coefficients against real BPE token counts."""
