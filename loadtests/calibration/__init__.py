"""Calibration of the simulator against a real server: one workload measured on both
(``workload.py``), profile coefficients fitted from the real figures (``fit.py``), and the
comparison table (``table.py``). ``python -m loadtests.calibration --help``.
"""
