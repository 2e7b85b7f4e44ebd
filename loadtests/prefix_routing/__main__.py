"""``python -m loadtests.prefix_routing``: see ``loadtests.prefix_routing.cli``."""

import sys

from loadtests.prefix_routing.cli import main

sys.exit(main())
