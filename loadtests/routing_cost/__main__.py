"""``python -m loadtests.routing_cost``: see ``loadtests.routing_cost.cli``."""

import sys

from loadtests.routing_cost.cli import main

sys.exit(main())
