"""``python -m loadtests.calibration``: see ``loadtests.calibration.cli``."""

from loadtests.calibration.cli import main

main()
