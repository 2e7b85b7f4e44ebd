"""``python -m loadtests.fit.router_weights``: see ``loadtests.fit.router_weights.cli``."""

import sys

from loadtests.fit.router_weights.cli import main

sys.exit(main())
