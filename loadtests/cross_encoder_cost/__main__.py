"""``python -m loadtests.cross_encoder_cost``: see ``loadtests.cross_encoder_cost.cli``."""

import sys

from loadtests.cross_encoder_cost.cli import main

sys.exit(main())
