"""``python -m loadtests.fit.cross_encoder``: see ``loadtests.fit.cross_encoder.cli``."""

import sys

from loadtests.fit.cross_encoder.cli import main

sys.exit(main())
